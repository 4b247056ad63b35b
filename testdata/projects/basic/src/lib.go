package lib

// TODO: tidy
func Lib() {}

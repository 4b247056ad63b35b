module github.com/llembas/lembas

go 1.26.8

require (
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

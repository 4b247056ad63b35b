# lembas: our .zshrc runs the user's, with ZDOTDIR theirs (see .zshenv).
__lembas_user
__lembas_source .zshrc
__lembas_ours

# lembas: our .zprofile runs the user's (see .zshenv).
__lembas_user
__lembas_source .zprofile
__lembas_ours

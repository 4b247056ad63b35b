# lembas: the rc wrapper of a zsh terminal, as $ZDOTDIR/.zshenv of a private
# directory (mode 0700) that zsh -l is started with. Each of our files runs
# the user's own file of the same name with ZDOTDIR as the user has it (their
# .zshenv may set it), then points zsh back here for the next one; .zlogin
# adds the marks and leaves ZDOTDIR as the user's, so .zlogout is theirs.
# {{...}} are filled in, shell-quoted, when the terminal opens.
__lembas_zd={{zdotdir}}
__lembas_host={{host}}
__lembas_uzd={{user_zdotdir}}
__lembas_uzd_set={{user_zdotdir_set}}
__lembas_uzd_exp=$__lembas_uzd_set

# __lembas_user sets ZDOTDIR as the user has it; __lembas_ours notes how
# they left it and points zsh back at our files.
__lembas_user() {
	if [[ -n $__lembas_uzd_set ]]; then
		typeset -g ZDOTDIR=$__lembas_uzd
		if [[ -n $__lembas_uzd_exp ]]; then export ZDOTDIR; else typeset -g +x ZDOTDIR; fi
	else
		unset ZDOTDIR
	fi
}
__lembas_ours() {
	__lembas_uzd_set=${ZDOTDIR+1}
	__lembas_uzd=${ZDOTDIR-}
	__lembas_uzd_exp=
	[[ ${(t)ZDOTDIR} == *export* ]] && __lembas_uzd_exp=1
	typeset -g ZDOTDIR=$__lembas_zd
}
__lembas_source() {
	local f=${ZDOTDIR:-$HOME}/$1
	if [[ -r $f ]]; then source "$f"; fi
}

__lembas_user
__lembas_source .zshenv
__lembas_ours

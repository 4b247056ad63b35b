# lembas: the rc wrapper of a bash terminal (bash --init-file this -i).
# First what a login shell reads, then the prompt marks. {{host}} is filled
# in, shell-quoted, when the terminal opens.

# /etc/profile with PS1 unset: bash has read /etc/bash.bashrc already, and
# /etc/profile would read it a second time.
__lembas_ps1=${PS1-}
unset PS1
if [ -r /etc/profile ]; then . /etc/profile; fi
PS1=${PS1-$__lembas_ps1}
unset __lembas_ps1
for __lembas_f in ~/.bash_profile ~/.bash_login ~/.profile; do
	if [ -r "$__lembas_f" ]; then . "$__lembas_f"; break; fi
done
unset __lembas_f

# A login shell's logout and ~/.bash_logout, which bash keeps for login
# shells and this one is not one to bash.
# An EXIT trap the user's files set runs first.
logout() { exit "$@"; }
__lembas_user_exit=
if __lembas_t=$(trap -p EXIT) && [ -n "$__lembas_t" ]; then
	eval "set -- $__lembas_t"
	__lembas_user_exit=$3
	set --
fi
unset __lembas_t
trap '__lembas_status=$?; eval "$__lembas_user_exit"; if [ -r ~/.bash_logout ]; then . ~/.bash_logout; fi; exit $__lembas_status' EXIT

__lembas_host={{host}}
__lembas_ran=
__lembas_n=()

# The path of OSC 7, percent-encoded byte by byte.
__lembas_cwd() {
	local LC_ALL=C p=$PWD out= c h i
	for ((i = 0; i < ${#p}; i++)); do
		c=${p:i:1}
		case $c in
		[a-zA-Z0-9/._~-]) out+=$c ;;
		*) printf -v h '%%%02X' "'$c"; out+=${h: -3} ;;
		esac
	done
	printf '\e]7;file://%s%s\a' "$__lembas_host" "$out"
}

# Runs before every prompt: D for the command that finished (none for an
# empty line), OSC 7, then the user's own prompt commands, then A and B put
# back into PS1 where a hook rebuilt it without them, and C into PS0.
__lembas_precmd() {
	local s=$? cmd
	if [ -n "$__lembas_ran" ]; then
		printf '\e]133;D;%s\a' "$s"
		__lembas_ran=
	fi
	__lembas_cwd
	for cmd in "${__lembas_user_pc[@]}"; do
		__lembas_status $s
		eval "$cmd"
	done
	if [ "${#PROMPT_COMMAND[@]}" -ne 1 ] || [ "$PROMPT_COMMAND" != __lembas_precmd ]; then
		# a hook added itself to PROMPT_COMMAND: keep it, before us
		__lembas_keep_pc
	fi
	local a='\[\e]133;A\a\]' b='\[\e]133;B\a\]'
	case $PS1 in "$a"*) ;; *) PS1=$a${PS1//"$a"/} ;; esac
	case $PS1 in *"$b") ;; *) PS1=${PS1//"$b"/}$b ;; esac
	# PS0 is shown when a typed command starts (not for an empty line):
	# C, and the subscript's assignment notes that a command ran.
	local c='${__lembas_n[__lembas_ran=1]}\e]133;C\a'
	case ${PS0-} in *"$c"*) ;; *) PS0=${PS0-}$c ;; esac
}
__lembas_status() { return "$1"; }

# The user's PROMPT_COMMAND (a string or, since bash 5.1, an array) runs
# from ours; ours is the only one left in it.
__lembas_user_pc=()
__lembas_keep_pc() {
	local e
	for e in "${PROMPT_COMMAND[@]}"; do
		e=${e//__lembas_precmd/:}
		if [ -n "$e" ] && [ "$e" != : ]; then __lembas_user_pc+=("$e"); fi
	done
	unset PROMPT_COMMAND
	PROMPT_COMMAND=__lembas_precmd
}
__lembas_keep_pc

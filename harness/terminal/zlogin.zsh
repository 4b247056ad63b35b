# lembas: our .zlogin runs the user's, then marks every prompt and leaves
# ZDOTDIR as the user has it.
__lembas_user
__lembas_source .zlogin
unfunction __lembas_user __lembas_ours __lembas_source
unset __lembas_zd __lembas_uzd __lembas_uzd_set __lembas_uzd_exp
__lembas_ran=

# The path of OSC 7, percent-encoded byte by byte.
__lembas_cwd() {
	local LC_ALL=C p=$PWD out= c h i
	for ((i = 1; i <= ${#p}; i++)); do
		c=${p[i]}
		case $c in
		[a-zA-Z0-9/._~-]) out+=$c ;;
		*) printf -v h '%%%02X' "'$c"; out+=${h[-3,-1]} ;;
		esac
	done
	printf '\e]7;file://%s%s\a' "$__lembas_host" "$out"
}

# Last of the precmd hooks: D for the command that finished (none for an
# empty line), OSC 7, and A and B put back where a hook rebuilt the prompt.
__lembas_precmd() {
	local s=$?
	if [[ -n $__lembas_ran ]]; then
		printf '\e]133;D;%s\a' "$s"
		__lembas_ran=
	fi
	__lembas_cwd
	local a=$'%{\e]133;A\a%}' b=$'%{\e]133;B\a%}'
	[[ $PS1 == "$a"* ]] || PS1=$a${PS1//"$a"/}
	[[ $PS1 == *"$b" ]] || PS1=${PS1//"$b"/}$b
}

# C as a command starts; and ours moved back to the end of precmd_functions
# should a hook have been added after it.
__lembas_preexec() {
	__lembas_ran=1
	printf '\e]133;C\a'
	precmd_functions=(${precmd_functions:#__lembas_precmd} __lembas_precmd)
}

precmd_functions+=(__lembas_precmd)
preexec_functions+=(__lembas_preexec)

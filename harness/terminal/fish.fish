# lembas: the marks of a fish terminal (fish -l --init-command 'source this'):
# fish has read the user's configuration by then. {{host}} is filled in,
# quoted, when the terminal opens.
set -g __lembas_host {{host}}
set -g __lembas_ran ''
set -g __lembas_status 0

function __lembas_preexec --on-event fish_preexec
    if test -n (string trim -- "$argv" | string collect)
        set -g __lembas_ran 1
        printf '\e]133;C\a'
    end
end

function __lembas_postexec --on-event fish_postexec
    set -g __lembas_status $status
end

# Before every prompt: D for the command that finished (none for an empty
# line), OSC 7 (string escape's url style percent-encodes byte by byte),
# and fish_prompt wrapped in A and B again if something redefined it.
function __lembas_prompt --on-event fish_prompt
    if test -n "$__lembas_ran"
        printf '\e]133;D;%s\a' $__lembas_status
        set -g __lembas_ran ''
    end
    printf '\e]7;file://%s%s\a' $__lembas_host (string escape --style=url -- $PWD)
    if not functions fish_prompt | string match -q '*__lembas_user_prompt*'
        functions -e __lembas_user_prompt
        if functions -q fish_prompt
            functions -c fish_prompt __lembas_user_prompt
        else
            function __lembas_user_prompt
                printf '%s> ' (prompt_pwd)
            end
        end
        function fish_prompt
            printf '\e]133;A\a'
            __lembas_user_prompt
            printf '\e]133;B\a'
        end
    end
end

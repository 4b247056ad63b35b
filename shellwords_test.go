package main

import (
	"encoding/json"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseShell(t *testing.T) {
	env := shellEnv{Home: "/home/u"}
	for _, tc := range []struct {
		line string
		want string // the commands as JSON
	}{
		{`ls -la`, `[{"words":["ls","-la"]}]`},
		{`\rm -rf /`, `[{"words":["rm","-rf","/"]}]`},
		{`r''m "-"rf /`, `[{"words":["rm","-rf","/"]}]`},
		{`echo "a b" 'c d' e\ f`, `[{"words":["echo","a b","c d","e f"]}]`},
		{`echo "\$x \"q\" \n"`, `[{"words":["echo","$x \"q\" \\n"]}]`},
		{`a && b || c; d | e & f`, `[{"words":["a"]},{"words":["b"]},{"words":["c"]},{"words":["d"]},{"words":["e"]},{"words":["f"]}]`},
		{"a\nb", `[{"words":["a"]},{"words":["b"]}]`},
		{`echo $(date) ` + "`whoami`", `[{"words":["date"]},{"words":["whoami"]},{"words":["echo","$(date)","` + "`whoami`" + `"]}]`},
		{`diff <(ls a) >(cat)`, `[{"words":["ls","a"]},{"words":["cat"]},{"words":["diff","<(ls a)",">(cat)"]}]`},
		{`cd ~ && ls ~/x $HOME ${HOME}/y "~"`, `[{"words":["cd","/home/u"]},{"words":["ls","/home/u/x","/home/u","/home/u/y","~"]}]`},
		{`echo a$IFS"b$IFS"c`, `[{"words":["echo","a","b c"]}]`},
		{`echo {a,b}{1,2} '{x,y}' {} {a}`, `[{"words":["echo","a1","a2","b1","b2","{x,y}","{}","{a}"]}]`},
		{`echo {1..3} {a..c}`, `[{"words":["echo","1","2","3","a","b","c"]}]`},
		{`echo $'a\tb\x41\101\u00e9'`, `[{"words":["echo","a\tbAAé"]}]`},
		{`ls //usr/./lib/. /a//b/ /.`, `[{"words":["ls","/usr/lib","/a/b/","/"]}]`},
		{`dd of=//dev//sda`, `[{"words":["dd","of=/dev/sda"]}]`},
		{`A=1 B="x y" make`, `[{"words":["make"],"assigns":["A=1","B=x y"]}]`},
		{`A=1`, `[{"words":[],"assigns":["A=1"]}]`},
		{`cat <in >out 2>&1 >>log &>all 3<>rw >|clob`, `[{"words":["cat"],"redirs":[{"op":"<","target":"in"},{"op":">","target":"out"},{"op":"2>&","target":"1"},{"op":">>","target":"log"},{"op":"&>","target":"all"},{"op":"3<>","target":"rw"},{"op":">|","target":"clob"}]}]`},
		{"cat <<EOF | wc\nx $y\nEOF\nls", `[{"words":["cat"],"redirs":[{"op":"<<","target":"EOF","body":"x $y\n","expands":true}]},{"words":["wc"]},{"words":["ls"]}]`},
		{"cat <<'E' >n\n$(id) \\$x\nE", `[{"words":["cat"],"redirs":[{"op":"<<","target":"E","body":"$(id) \\$x\n"},{"op":">","target":"n"}]}]`},
		{"cat <<E\n`id` \\$x $HOME \"q\"\nE", `[{"words":["cat"],"redirs":[{"op":"<<","target":"E","body":"` + "`id`" + ` $x /home/u \"q\"\n","expands":true}]},{"words":["id"]}]`},
		{"cat <<-A 3<<B\n\ta\n\tA\nb\nB", `[{"words":["cat"],"redirs":[{"op":"<<-","target":"A","body":"a\n"},{"op":"3<<","target":"B","body":"b\n"}]}]`},
		{"bash -s <<'E'\nls; pwd\nE", `[{"words":[],"redirs":[{"op":"<<","target":"E","body":"ls; pwd\n"}]},{"words":["ls"]},{"words":["pwd"]}]`},
		{"ssh h <<E\nuptime\nE", `[{"words":["ssh","h"],"redirs":[{"op":"<<","target":"E","body":"uptime\n"}]},{"words":["h"]},{"words":["uptime"]}]`},
		{`sudo -u bob -E env -i A=1 nice -n 5 timeout -k 2 10 stdbuf -oL /usr/bin/git status`, `[{"words":["git","status"],"assigns":["A=1"]}]`},
		{`command -v git`, `[{"words":["command","-v","git"]}]`},
		{`bash -c 'ls; pwd' name arg`, `[{"words":["ls"]},{"words":["pwd"]}]`},
		{`eval "ls -l" '&&' pwd`, `[{"words":["ls","-l"]},{"words":["pwd"]}]`},
		{`find . -name '*.go' -exec gofmt -l {} +`, `[{"words":["find",".","-name","*.go","-exec","gofmt","-l","{}","+"]},{"words":["gofmt","-l","{}"]}]`},
		{`ls | xargs -n1 -I{} echo {}`, `[{"words":["ls"]},{"words":["echo","{}"],"fed":true}]`},
		{`f() { x; }; f`, `[{"words":null,"defines":"f"},{"words":["x"]},{"words":["f"]}]`},
		{`function g { y; }`, `[{"words":null,"defines":"g"},{"words":["y"]}]`},
		{`echo ${HOME%/}x ${HOME:+$HOME} ${Q:-/}`, `[{"words":["echo","/home/ux","/home/u","${Q:-/}"]}]`},
		{`alias x='rm -rf ~'`, `[{"words":["alias","x=rm -rf ~"]},{"words":["rm","-rf","/home/u"]}]`},
		{`if a; then b; elif c; then d; else e; fi`, `[{"words":["a"]},{"words":["b"]},{"words":["c"]},{"words":["d"]},{"words":["e"]}]`},
		{`for f in $(ls); do echo $f; done`, `[{"words":["ls"]},{"words":["echo","$f"]}]`},
		{`while read l; do echo "$l"; done < in.txt`, `[{"words":["read","l"]},{"words":["echo","$l"]},{"words":[],"redirs":[{"op":"<","target":"in.txt"}]}]`},
		{`echo if then; ( ls ) ; { pwd; }`, `[{"words":["echo","if","then"]},{"words":["ls"]},{"words":["pwd"]}]`},
		{`echo a # comment`, `[{"words":["echo","a"]}]`},
		{`echo a#b`, `[{"words":["echo","a#b"]}]`},
		{`ls \` + "\n" + `-l`, `[{"words":["ls","-l"]}]`},
		{`''`, `[{"words":[""]}]`},
	} {
		got, err := parseShell(tc.line, env)
		if err != nil {
			t.Errorf("parseShell(%q): %v", tc.line, err)
			continue
		}
		b, _ := json.Marshal(got)
		var a, w any
		json.Unmarshal(b, &a)
		if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
			t.Fatalf("bad want %s: %v", tc.want, err)
		}
		if !reflect.DeepEqual(a, w) {
			t.Errorf("parseShell(%q)\n got %s\nwant %s", tc.line, b, tc.want)
		}
	}
}

func TestParseShellErrors(t *testing.T) {
	for _, line := range []string{
		`echo 'x`, `echo "x`, `echo $(x`, "echo `x", `(x`, `x)`, `${a:-b}`, `echo ${a/b/"c"}`,
		`$((1))`, `((i++))`, `$x y`, `"$x" y`, `$(echo ls)`, `sudo $x`, `env $x`,
		"cat <<EOF\nx", "bash <<E\n$x\nE", "sh <<E\n`id`\nE", "bash <<'E'\necho 'x\nE", "cat <<E\n$((1))\nE", `case a in a) ;; esac`, "echo \u200brm", "r\u00a0m", "x\u202e",
		`if x; then y`, `then x`, `done`, `{ x`, `/bin/r* x`, `echo a\`, `[[ -f x ]]`,
		`echo $'\0'`, `echo $'\x00'`, `a=(1 2)`, `echo {1..1000}`, `env -S 'a | b'`, `bash -c "echo 'x"`,
		strings.Repeat("$(", 40) + strings.Repeat(")", 40), "a\x00b",
	} {
		if cmds, err := parseShell(line, shellEnv{Home: "/h"}); err == nil {
			b, _ := json.Marshal(cmds)
			t.Errorf("parseShell(%q) = %s, want an error", line, b)
		}
	}
}

// stripHeredocs drops here-document redirections, which shellQuoteCmd
// cannot spell back.
func stripHeredocs(c shellCmd) shellCmd {
	out := shellCmd{Words: c.Words, Assigns: c.Assigns}
	for _, r := range c.Redirs {
		if !strings.HasSuffix(r.Op, "<<") && !strings.HasSuffix(r.Op, "<<-") {
			out.Redirs = append(out.Redirs, r)
		}
	}
	return out
}

// FuzzShellWords checks that parseShell never panics, that every command
// it returns is spelled back by shellQuoteCmd as a line that parses to the
// same command (first; find -exec adds the one it runs), and that the floor's verdict on the command and on its
// re-quoted spelling agree.
func FuzzShellWords(f *testing.F) {
	for _, area := range []string{"hardline", "arity", "permission"} {
		data, err := fs.ReadFile(harnessFS, "harness/conformance/"+area+".json")
		if err != nil {
			f.Fatal(err)
		}
		var file conformanceFile
		if err := json.Unmarshal(data, &file); err != nil {
			f.Fatal(err)
		}
		for _, c := range file.Cases {
			var in struct {
				Line string `json:"line"`
				Call struct {
					Command string `json:"command"`
				} `json:"call"`
			}
			json.Unmarshal(c.Input, &in)
			for _, l := range []string{in.Line, in.Call.Command} {
				if l != "" {
					f.Add(l)
				}
			}
		}
	}
	for _, l := range []string{
		"cat <<EOF > n\nx $(date) `id` \\$y ${HOME}\nEOF", "cat <<-A 3<<'B'\n\t$(ls)\n\tA\nb\nB",
		"bash <<'E'\nrm -rf ~\nE", "ssh h <<E\nuptime\nE", "x=$(cat <<E\n$(ls)\nE\n)",
		"f() { cat <<E\n`ls`\nE\n}", "python3 - <<'E'\nprint(1)\nE", "cat > x.sh <<'E'\nls\nE\nbash x.sh",
	} {
		f.Add(l)
	}
	h, err := loadHardline()
	if err != nil {
		f.Fatal(err)
	}
	env := shellEnv{Home: "/home/u"}
	f.Fuzz(func(t *testing.T, line string) {
		parseShellPartial(line, env)
		cmds, err := parseShell(line, env)
		checkHardline(line, env)
		if err != nil {
			return
		}
		for _, c := range cmds {
			c = stripHeredocs(c)
			if len(c.Words) == 0 && len(c.Redirs) == 0 && len(c.Assigns) == 0 {
				continue
			}
			q := shellQuoteCmd(c)
			again, err := parseShell(q, env)
			if err != nil {
				t.Fatalf("line %q: command %q re-quoted as %q: %v", line, c.Words, q, err)
			}
			if len(again) == 0 || !reflect.DeepEqual(normCmd(again[0]), normCmd(c)) {
				t.Fatalf("line %q: command %#v re-quoted as %q parses to %#v", line, c, q, again)
			}
			if len(c.Words) > 0 && h.CodeLater.Deferred[c.Words[0]] != "" {
				continue // alias and trap hold code the line runs as commands of their own
			}
			c.Fed = false
			want := h.judge("", []shellCmd{c}, nil, env)
			got, err := checkHardline(q, env)
			if err != nil {
				t.Fatalf("re-quoted %q: %v", q, err)
			}
			if got != nil && got.Rule == h.ForkBomb.ID {
				continue
			}
			if (want == nil) != (got == nil) || (want != nil && want.Rule != got.Rule) {
				t.Fatalf("line %q: verdict on the command %v, on its spelling %q %v", line, want, q, got)
			}
		}
	})
}

// normCmd makes nil and empty slices alike for comparison.
func normCmd(c shellCmd) shellCmd {
	if len(c.Words) == 0 {
		c.Words = nil
	}
	if len(c.Redirs) == 0 {
		c.Redirs = nil
	}
	if len(c.Assigns) == 0 {
		c.Assigns = nil
	}
	c.Fed = false // xargs's feeding is not in a command's own spelling
	c.replace, c.fn, c.loops = "", "", nil
	// A wrapper's output option (strace -o f) is also read as > f: spelt
	// again, the line holds both, which is the same write twice.
	var rs []shellRedir
	for _, r := range c.Redirs {
		if !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	c.Redirs = rs
	return c
}

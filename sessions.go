package main

// lembas sessions: list, show, delete and prune the stored sessions.

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

const sessionsUsage = `usage:
  lembas sessions list             every session, newest first
  lembas sessions show ID          the conversation, with each final answer verbatim
  lembas sessions delete ID        remove a session
  lembas sessions prune [--days N] remove sessions not used for N days (default 30)`

func cmdSessions(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"sessions needs a subcommand\n" + sessionsUsage}
	}
	st := newStore(stateDir(), func(s string) { fmt.Fprintln(stderr, "lembas: "+s) })
	defer st.close()
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, sessionsUsage)
		return nil
	case "list":
		all, err := st.list()
		if err != nil {
			return err
		}
		for _, s := range all {
			if s.Parent != "" {
				continue // a subagent's transcript: sessions show <parent> prints it
			}
			fmt.Fprintf(stdout, "%s\t%s\t%d turns\t%s\t%s\n", s.ID, s.Updated.Local().Format("2006-01-02 15:04"), len(s.Turns), s.Project, s.Title)
		}
		return nil
	case "show":
		if len(args) != 2 {
			return usageError{"sessions show takes one session id\n" + sessionsUsage}
		}
		s, err := st.read(args[1])
		if err != nil {
			return err
		}
		showSession(stdout, s)
		return showSubagents(stdout, st, s.ID) // subagents.go
	case "delete":
		if len(args) != 2 {
			return usageError{"sessions delete takes one session id\n" + sessionsUsage}
		}
		if err := st.remove(args[1]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %s\n", args[1])
		return noteDeleted(args[1]) // link_deletes.go: the instance hears of it on the next link
	case "prune":
		fs := flag.NewFlagSet("prune", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		days := fs.Int("days", theSpec().Loop.Store.PruneDays, "")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 || *days < 1 {
			return usageError{"sessions prune takes only --days N (N ≥ 1)\n" + sessionsUsage}
		}
		gone, err := st.prune(*days)
		if err != nil {
			return err
		}
		var kept []error
		for _, id := range gone {
			if err := noteDeleted(id); err != nil { // link_deletes.go
				kept = append(kept, err)
			}
		}
		fmt.Fprintf(stdout, "pruned %d session(s)\n", len(gone))
		return errors.Join(kept...)
	}
	return usageError{fmt.Sprintf("unknown sessions subcommand %q\n%s", args[0], sessionsUsage)}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"
)

// The command line: every command is one entry of commands(), with its own
// flag.FlagSet, so that each has a usage text listing its flags, printed by
// -h, --help and help <command> (exit status 0) and, with the mistake, by a
// wrong flag or argument (exit status 2).

// command is one command of the program.
type command struct {
	// name is what selects the command: "serve", "user create".
	name string
	// synopsis is what follows the name in the usage line.
	synopsis string
	// summary is one line for the list of commands.
	summary string
	// about is what help <command> says after the usage line.
	about string
	// minArgs and maxArgs bound the arguments left after the flags; maxArgs
	// -1 is no bound.
	minArgs, maxArgs int
	// setup declares the command's flags on fs and returns the action, to
	// run once they are parsed.
	setup func(fs *flag.FlagSet) action
}

// action runs a command with the arguments left after its flags.
type action func(ctx context.Context, e *invocation, args []string) error

// invocation is what a command runs with: the process's environment and streams.
type invocation struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// usageError is a mistake in the command line: main prints it with the usage
// of the command and exits with status 2.
type usageError struct {
	msg   string
	usage string // the usage text of the command, "" when none applies
}

func (e usageError) Error() string { return e.msg }

// usageErrorf returns a usageError without usage text: run adds the usage of
// the command it ran.
func usageErrorf(format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...)}
}

// commands lists every command, in the order help lists them.
func commands() []*command {
	return []*command{
		serveCommand, migrateCommand, versionCommand, helpCommand(), seedCommand, backupCommand,
		userCreateCommand, userListCommand, userSetPasswordCommand, userGrantCommand, userRevokeCommand,
		apikeyCreateCommand, apikeyListCommand, apikeyRevokeCommand,
		clientCreateCommand, clientListCommand, clientDeleteCommand,
		webhookCreateCommand, webhookListCommand, webhookDeleteCommand, webhookRotateCommand, webhookDeliveriesCommand,
	}
}

// groups are the first words of the two-word commands.
var groups = map[string]string{
	"user":    "manage users: create, list, passwords, roles and permissions",
	"apikey":  "manage API keys",
	"client":  "manage OAuth clients",
	"webhook": "manage webhook endpoints: create, list, delete, rotate secrets, delivery logs",
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// run is the whole program, with its environment passed in so tests can run
// it in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &invocation{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		args = []string{"serve"}
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, mainUsage())
		return nil
	case "-version", "--version":
		args[0] = "version"
	}
	if _, ok := groups[args[0]]; ok {
		group := args[0]
		if len(args) == 1 {
			return usageError{msg: group + ": missing command", usage: groupUsage(group)}
		}
		switch args[1] {
		case "-h", "-help", "--help":
			fmt.Fprint(stdout, groupUsage(group))
			return nil
		}
		c := findCommand(group + " " + args[1])
		if c == nil {
			return usageError{msg: fmt.Sprintf("unknown command %q", group+" "+args[1]), usage: groupUsage(group)}
		}
		return c.run(ctx, e, args[2:])
	}
	c := findCommand(args[0])
	if c == nil || strings.Contains(c.name, " ") {
		return usageError{msg: fmt.Sprintf("unknown command %q", args[0]), usage: mainUsage()}
	}
	return c.run(ctx, e, args[1:])
}

// run parses args with the command's flags and runs it.
func (c *command) run(ctx context.Context, e *invocation, args []string) error {
	fs := c.flagSet()
	act := c.setup(fs)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.stdout, c.usage(fs))
		return nil
	}
	if err != nil {
		return usageError{msg: fmt.Sprintf("%s: %v", c.name, err), usage: c.usage(fs)}
	}
	if len(pos) < c.minArgs {
		return usageError{msg: fmt.Sprintf("%s: missing argument: %s", c.name, c.synopsis), usage: c.usage(fs)}
	}
	if c.maxArgs >= 0 && len(pos) > c.maxArgs {
		return usageError{msg: fmt.Sprintf("%s: unexpected argument %q", c.name, pos[c.maxArgs]), usage: c.usage(fs)}
	}
	err = act(ctx, e, pos)
	var ue usageError
	if errors.As(err, &ue) && ue.usage == "" {
		ue.usage = c.usage(fs)
		return ue
	}
	return err
}

func (c *command) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseArgs parses the flags in args with fs, also those after an argument
// (user grant ann@example.com --role editor), and returns the arguments.
// After "--" everything is an argument.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usage returns the command's usage text: its usage line, what it does, and
// its flags.
func (c *command) usage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: resourceapi %s", c.name)
	if c.synopsis != "" {
		fmt.Fprintf(&b, " %s", c.synopsis)
	}
	fmt.Fprintf(&b, "\n\n%s\n", strings.TrimSpace(firstNonEmpty(c.about, c.summary)))
	b.WriteString("\nFlags:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if arg != "" {
			name += " " + arg
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, text)
	})
	fmt.Fprintf(tw, "  -h, --help\tshow this help\n")
	tw.Flush()
	b.WriteString(configNote)
	return b.String()
}

const configNote = `
The database and every setting come from RESOURCEAPI_* environment
variables (RESOURCEAPI_DATABASE_URL: a SQLite file, ./data/resourceapi.db
by default, or postgres://...). See the README and docs/operations.md.
`

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// listCommands writes one line per command of group ("" for all).
func listCommands(w io.Writer, group string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		if g, _, _ := strings.Cut(c.name, " "); group != "" && g != group {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
}

func mainUsage() string {
	var b strings.Builder
	b.WriteString("usage: resourceapi [command] [flags] [arguments]\n\n" +
		"One binary serves the API (serve, the default command) and manages its\n" +
		"database.\n\nCommands:\n")
	listCommands(&b, "")
	b.WriteString("\nRun 'resourceapi help <command>' or 'resourceapi <command> --help' for\n" +
		"a command's flags.\n")
	b.WriteString(configNote)
	return b.String()
}

func groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: resourceapi %s <command> [flags] [arguments]\n\nTo %s.\n\nCommands:\n", group, groups[group])
	listCommands(&b, group)
	fmt.Fprintf(&b, "\nRun 'resourceapi help %s <command>' for a command's flags.\n", group)
	b.WriteString(configNote)
	return b.String()
}

// helpCommand is a function, not a variable like the other commands: it
// lists them.
func helpCommand() *command {
	return &command{
		name:     "help",
		synopsis: "[command]",
		summary:  "show the commands, or a command's usage and flags",
		minArgs:  0, maxArgs: 2,
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, e *invocation, args []string) error {
				name := strings.Join(args, " ")
				switch {
				case name == "":
					fmt.Fprint(e.stdout, mainUsage())
				case groups[name] != "":
					fmt.Fprint(e.stdout, groupUsage(name))
				default:
					c := findCommand(name)
					if c == nil {
						return usageError{msg: fmt.Sprintf("help: unknown command %q", name), usage: mainUsage()}
					}
					fs := c.flagSet()
					c.setup(fs)
					fmt.Fprint(e.stdout, c.usage(fs))
				}
				return nil
			}
		},
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// required fails with a usage error when one of the named flags is unset.
func required(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			return usageErrorf("%s: --%s is required", fs.Name(), n)
		}
	}
	return nil
}

// isTerminal reports whether w is a terminal: progress bars and password
// prompts are for a person, never for a pipe or a file.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

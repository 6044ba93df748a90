package main_test

import (
	"strings"
	"testing"
)

// everyCommand lists every command with its flags, as a person finds them
// in the README.
var everyCommand = map[string][]string{
	"serve":             nil,
	"migrate":           nil,
	"version":           nil,
	"help":              nil,
	"seed":              {"--password-stdin"},
	"backup":            {"--force"},
	"user create":       {"--email", "--name", "--role", "--permission", "--password-stdin"},
	"user list":         {"--role", "--deleted", "--json"},
	"user set-password": nil,
	"user grant":        {"--role", "--permission"},
	"user revoke":       {"--role", "--permission"},
	"apikey create":     {"--user", "--name"},
	"apikey list":       {"--user", "--json"},
	"apikey revoke":     nil,
	"client create":     {"--name", "--grant", "--redirect-uri", "--public"},
	"client list":       {"--json"},
	"client delete":     nil,
}

// TestHelp runs the binary: help, help <command>, -h and --help print the
// usage and flags of every command and group and exit 0, without a
// database or configuration; a wrong flag prints the usage and exits 2.
func TestHelp(t *testing.T) {
	// A configuration error must not stop help.
	c := newCLI(t, "RESOURCEAPI_LOG_LEVEL=loud")
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"-help"}} {
		out := c.must("", args...)
		for name := range everyCommand {
			if !strings.Contains(out, "\n  "+name+" ") {
				t.Errorf("resourceapi %s does not list %q:\n%s", args[0], name, out)
			}
		}
	}
	for name, flags := range everyCommand {
		words := strings.Fields(name)
		for _, args := range [][]string{
			append([]string{"help"}, words...),
			append(words, "-h"),
			append(words, "--help"),
			append(words, "-help"),
		} {
			r := c.run("", args...)
			if r.code != 0 || r.stderr != "" {
				t.Errorf("resourceapi %s: exit %d, stderr %q; want exit 0 and nothing on stderr", strings.Join(args, " "), r.code, r.stderr)
				continue
			}
			if !strings.HasPrefix(r.stdout, "usage: resourceapi "+name) {
				t.Errorf("resourceapi %s printed %q, want its usage", strings.Join(args, " "), r.stdout)
			}
			for _, f := range append(flags, "-h, --help") {
				if !strings.Contains(r.stdout, "  "+f) {
					t.Errorf("resourceapi %s does not describe %s:\n%s", strings.Join(args, " "), f, r.stdout)
				}
			}
		}
		args := append(words, "--no-such-flag")
		r := c.run("", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "usage: resourceapi "+name) || !strings.Contains(r.stderr, "no-such-flag") {
			t.Errorf("resourceapi %s: exit %d, stderr %q; want exit 2, the mistake and the usage", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	for _, group := range []string{"user", "apikey", "client"} {
		for _, args := range [][]string{{"help", group}, {group, "--help"}, {group, "-h"}} {
			out := c.must("", args...)
			if !strings.HasPrefix(out, "usage: resourceapi "+group) || !strings.Contains(out, "\n  "+group+" list ") {
				t.Errorf("resourceapi %s printed %q, want the group's usage and commands", strings.Join(args, " "), out)
			}
		}
		if errOut := c.fails(2, "", group); !strings.Contains(errOut, "usage: resourceapi "+group) {
			t.Errorf("resourceapi %s: stderr %q, want the group's usage", group, errOut)
		}
		if errOut := c.fails(2, "", group, "frobnicate"); !strings.Contains(errOut, "usage: resourceapi "+group) {
			t.Errorf("resourceapi %s frobnicate: stderr %q, want the group's usage", group, errOut)
		}
	}
	for _, args := range [][]string{{"frobnicate"}, {"help", "frobnicate"}, {"serve", "now"}, {"user", "set-password"}, {"backup"}} {
		if errOut := c.fails(2, "", args...); !strings.Contains(errOut, "usage: resourceapi") {
			t.Errorf("resourceapi %s: stderr %q, want the usage", strings.Join(args, " "), errOut)
		}
	}
	mustBeEmpty(t, c.dir)
}

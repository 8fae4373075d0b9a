package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

const versionUsage = `usage: streamsql version

Prints the module version and the commit the binary was built from (as Go
recorded it: a go build in a git checkout records the commit, its time and
whether the tree had uncommitted changes; go run and a build outside a
checkout may not, and then only what is known is printed). --version on
its own does the same.
`

func (c *cli) version(args []string) error {
	cmd := newCommand("version", versionUsage)
	rest, err := cmd.parse(c, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return cmd.fail("version takes no arguments, got %q", rest)
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	fmt.Fprint(c.stdout, versionText(info))
	return nil
}

// versionText is what `streamsql version` prints for info (nil: the binary
// carries none):
//
//	streamsql v1.2.0
//	commit:   0123abcd... (2026-01-02T03:04:05Z, modified)
//	go:       go1.26.8 linux/amd64
func versionText(info *debug.BuildInfo) string {
	var b strings.Builder
	version := "(unknown)"
	if info != nil && info.Main.Version != "" {
		version = info.Main.Version
	}
	fmt.Fprintf(&b, "streamsql %s\n", version)
	if info != nil {
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			var notes []string
			if t := settings["vcs.time"]; t != "" {
				notes = append(notes, t)
			}
			if settings["vcs.modified"] == "true" {
				notes = append(notes, "modified")
			}
			fmt.Fprintf(&b, "commit:   %s", rev)
			if len(notes) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
			}
			b.WriteByte('\n')
		} else {
			b.WriteString("commit:   unknown (not recorded in this build)\n")
		}
	}
	goVersion := runtime.Version()
	if info != nil && info.GoVersion != "" {
		goVersion = info.GoVersion
	}
	fmt.Fprintf(&b, "go:       %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

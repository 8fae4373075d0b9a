// Package web holds the web console: its sources (console/: TypeScript,
// built by build.sh) and the built files (static/, committed), embedded with
// go:embed and served at / by the HTTP API. bundle_test.go checks that
// static/ was built from the sources as they are and loads nothing from
// outside the server.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS is the console's files, rooted at static/.
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed directive guarantees static/ exists
	}
	return sub
}

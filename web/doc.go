// Package web holds the console's assets, embedded with go:embed and served
// at / by the HTTP API. For now a placeholder page that lists the views and
// links to their results.
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

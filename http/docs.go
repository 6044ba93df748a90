package http

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/resourceapi/resourceapi"
)

// docsFiles is the documentation page: Swagger UI (copied from its npm
// package by web/docs/build.sh) and the page around it (index.html,
// init.js, page.css).
//
//go:embed docs
var docsFiles embed.FS

// docsCSP keeps the documentation page to this server: scripts, styles,
// images, fonts and requests from 'self' only, so that the page can load
// nothing from anywhere else, and no other site may frame it.
const docsCSP = "default-src 'self'; base-uri 'none'; object-src 'none'; form-action 'self'; frame-ancestors 'none'"

// docsAssets are the page's files by name, read once: they are part of the
// binary and never change.
var docsAssets = sync.OnceValue(func() map[string]*asset {
	out := map[string]*asset{}
	err := fs.WalkDir(docsFiles, "docs", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := docsFiles.ReadFile(p)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, "docs/")] = newAsset(b, contentTypeOf(p))
		return nil
	})
	if err != nil {
		panic(err) // the embedded files are part of the binary
	}
	return out
})

// contentTypeOf names the type of a file of the page by its extension; the
// system's table is not consulted, so every machine serves the same.
func contentTypeOf(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".jpg":
		return "image/jpeg"
	}
	return "text/plain; charset=utf-8"
}

// docsPage serves GET /docs (the page) and /docs/{file} (its files).
func (s *Server) docsPage() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("file")
		if r.URL.Path == "/docs" {
			name = "index.html"
		}
		a := docsAssets()[name]
		if a == nil {
			return resourceapi.Errorf(resourceapi.CodeNotFound, "Nothing is found at %s", truncate(r.URL.Path, 200))
		}
		h := w.Header()
		h.Set("Content-Security-Policy", docsCSP)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		writeAsset(w, r, a)
		return nil
	})
}

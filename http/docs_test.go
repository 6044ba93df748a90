package http_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// TestDocsAssets checks the documentation page as a client sees it: the
// page and every file it names are served, with the Content-Security-Policy
// that keeps it to this server, and a tag that revalidates.
func TestDocsAssets(t *testing.T) {
	c := mustServer(t, mustSQLite(t, newClock().Now)).anonymous()
	page := c.get("/docs")
	page.mustStatus(t, http.StatusOK)
	if got := page.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q, want text/html; charset=utf-8", got)
	}
	csp := page.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") || strings.Contains(csp, "http") {
		t.Errorf("Content-Security-Policy = %q, want 'self' only", csp)
	}
	c.get("/docs", "If-None-Match", page.Header.Get("ETag")).mustStatus(t, http.StatusNotModified)
	for _, f := range []string{"swagger-ui-bundle.js", "swagger-ui.css", "init.js", "page.css", "favicon.png", "oauth2-redirect.html"} {
		c.get("/docs/"+f).mustStatus(t, http.StatusOK)
	}
	c.get("/docs/nothing.js").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	// The style sheet's images are files of the page, not data: URLs (which
	// the policy would block).
	css := c.get("/docs/swagger-ui.css").text(t)
	if strings.Contains(css, "data:") || strings.Contains(css, "//") && strings.Contains(css, "url(http") {
		t.Error("swagger-ui.css refers to data: or remote URLs")
	}
}

// chromium returns the path of a Chromium (or Chrome) binary, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDocsPageInBrowser loads /docs in headless Chromium and scrolls until
// the page has rendered the list operation of every declared resource
// (users, orders, api-keys, ...) from the served document. Every request the browser makes
// must go to the test server, and the page must run without a script error
// or a Content-Security-Policy violation.
//
// The page opens on the operations: the first is in the first screen, the
// conventions are folded, the version shown is the server's build (not the
// API version 2), and HEAD and OPTIONS, which the document lists, are left
// out of the list, said once above it.
func TestDocsPageInBrowser(t *testing.T) {
	chrome := chromium()
	if chrome == "" {
		t.Skip("Chromium is not installed (Debian: apt-get install chromium); the documentation page is not checked in a browser")
	}
	const build = "v1.2.3-test (revision 0123456789ab, go1.26)"
	c := mustServer(t, mustSQLite(t, newClock().Now), func(cfg *rhttp.Config) { cfg.Version = build })
	ct, err := c.contract.get()
	if err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()

	// Everything the tab does is recorded from its first message on.
	var mu sync.Mutex
	var requests, problems []string
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithListener(func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || strings.Contains(e.Entry.Text, "Content Security Policy") {
				problems = append(problems, "log: "+e.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, "console.error: "+strings.Join(args, " "))
			}
		}
	}))
	defer cancelCtx()
	enable := func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, t, log.Enable, cdp.Empty{})
		return chromedp.Void{}, err
	}
	// The browser starts with the first action, under a context without a
	// deadline (a deadline there would bound the browser's life, not the
	// action's).
	if err := chromedp.Do(ctx, enable); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	// The list operation of every declared resource, as Swagger UI names
	// its element: operations-<tag>-<operationId>.
	var selectors []chromedp.CSS
	for _, res := range resourceapi.Declared() {
		op := ct.doc.Paths.Value("/" + res.Path).Get
		selectors = append(selectors, chromedp.CSS("#operations-"+op.Tags[0]+"-"+op.OperationID))
	}
	first := selectors[0]
	err = chromedp.Do(runCtx, chromedp.Navigate(c.base+"/docs"), chromedp.WaitVisible(first))
	// What a reader sees first, before any scrolling.
	type view struct {
		FirstTop, Height  float64
		Version           string
		Folded, Open      bool
		Conventions, Note string
	}
	var opening view
	if err == nil {
		opening, err = chromedp.Run(runCtx, chromedp.Evaluate[view](fmt.Sprintf(`(() => {
			const d = document.querySelector("details.conventions");
			const v = document.querySelector(".info .title .version");
			const n = document.querySelector(".every-path");
			return {
				firstTop: document.querySelector(%q).getBoundingClientRect().top,
				height: window.innerHeight,
				version: v ? v.textContent.trim() : "",
				folded: !!d, open: !!(d && d.open),
				conventions: d ? d.textContent : "",
				note: n ? n.textContent : "",
			};
		})()`, string(first))))
	}
	for _, sel := range selectors {
		if err != nil {
			break
		}
		// Swagger UI renders operations as they come into view, so the
		// page is scrolled, as a reader would, until the operation is there.
		scroll := fmt.Sprintf(`(() => {
			const e = document.querySelector(%q);
			if (e) { e.scrollIntoView(); return true; }
			window.scrollBy(0, window.innerHeight);
			return false;
		})()`, string(sel))
		err = chromedp.Do(runCtx,
			chromedp.Poll[chromedp.Void](scroll, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)),
			chromedp.WaitVisible(sel))
		if err != nil {
			err = fmt.Errorf("find %s: %w", sel, err)
		}
	}
	// Open the first operation: its parameters render from the document.
	if err == nil {
		err = chromedp.Do(runCtx, chromedp.Evaluate[chromedp.Void]("window.scrollTo(0, 0)"),
			chromedp.Click(first+" .opblock-summary-control"), chromedp.WaitVisible(first+" .parameters"))
	}
	var params string
	if err == nil {
		params, err = chromedp.Run(runCtx, chromedp.Text(first+" .parameters"))
	}
	// Once everything has been scrolled through: the methods the list shows.
	var methods []string
	if err == nil {
		methods, err = chromedp.Run(runCtx, chromedp.Evaluate[[]string](`[...new Set([...document.querySelectorAll(".opblock")].map(e =>
			[...e.classList].find(c => c.startsWith("opblock-") && !c.startsWith("opblock-deprecated"))))]`))
	}
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("load /docs: %v\nrequests: %v\nproblems: %v", err, requests, problems)
	}
	if opening.FirstTop >= opening.Height {
		t.Errorf("the first operation starts at %.0f px, below the first screen (%.0f px): the page does not open on the operations", opening.FirstTop, opening.Height)
	}
	if opening.Version != build {
		t.Errorf("the page shows version %q, want the server's build %q", opening.Version, build)
	}
	if !opening.Folded || opening.Open || !strings.Contains(opening.Conventions, "Versions.") || !strings.Contains(opening.Conventions, "Credentials.") {
		t.Errorf("the conventions are not in a closed <details> (found %v, open %v): %.200q", opening.Folded, opening.Open, opening.Conventions)
	}
	if !strings.Contains(opening.Note, "OPTIONS") || !strings.Contains(opening.Note, "HEAD") {
		t.Errorf("the page does not say that every path answers HEAD and OPTIONS: %q", opening.Note)
	}
	if ct.doc.Paths.Value("/users").Head == nil || ct.doc.Paths.Value("/users").Options == nil {
		t.Error("the document no longer lists HEAD and OPTIONS of /users; the page's filter is not what leaves them out")
	}
	if !slices.Contains(methods, "opblock-get") || !slices.Contains(methods, "opblock-post") {
		t.Errorf("the operation list shows the methods %v, want GET and POST among them", methods)
	}
	for _, m := range []string{"opblock-head", "opblock-options"} {
		if slices.Contains(methods, m) {
			t.Errorf("the operation list shows %s operations (methods %v)", strings.TrimPrefix(m, "opblock-"), methods)
		}
	}
	for _, want := range []string{"page", "limit", "sort", "fields"} {
		if !strings.Contains(params, want) {
			t.Errorf("the parameters of %s do not mention %s: %q", first, want, params)
		}
	}
	if err := chromedp.Cancel(ctx); err != nil { // close the browser before reading what it did
		t.Errorf("close Chromium: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(requests) == 0 {
		t.Fatal("the browser made no request")
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, c.base+"/") {
			t.Errorf("the page made a request outside the server: %s", u)
		}
	}
	for _, p := range problems {
		t.Errorf("page: %s", p)
	}
}

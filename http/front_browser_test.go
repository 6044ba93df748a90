package http_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestFrontPageInBrowser opens / in headless Chromium and follows every link
// that needs no credential: every request stays on the server, and no page
// logs an error or throws.
func TestFrontPageInBrowser(t *testing.T) {
	chrome := chromium()
	if chrome == "" {
		t.Skip("Chromium is not installed (Debian: apt-get install chromium); the front page is not checked in a browser")
	}
	c := mustServer(t, mustSQLite(t, newClock().Now))
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	var mu sync.Mutex
	var requests, problems []string
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithListener(func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
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
	if err := chromedp.Do(ctx, enable); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var title string
	err := chromedp.Do(runCtx, chromedp.Navigate(c.base+"/"), chromedp.WaitVisible(chromedp.CSS(`a[href="/docs"]`)))
	if err == nil {
		title, err = chromedp.Run(runCtx, chromedp.Title())
	}
	var hrefs []string
	if err == nil {
		hrefs, err = chromedp.Run(runCtx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("a")].map(a => a.getAttribute("href"))`))
	}
	if err != nil {
		t.Fatalf("load /: %v", err)
	}
	if title != "resourceapi" {
		t.Errorf("title = %q, want resourceapi", title)
	}
	for _, h := range hrefs {
		if h == "/api/users/me" { // needs a credential: 401 is its answer
			continue
		}
		if err := chromedp.Do(runCtx, chromedp.Navigate(c.base+h), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
			t.Errorf("follow %s: %v", h, err)
		}
	}
	if err := chromedp.Cancel(ctx); err != nil {
		t.Errorf("close Chromium: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(requests) < len(hrefs) {
		t.Fatalf("the browser made %d requests for %d links", len(requests), len(hrefs))
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, c.base+"/") {
			t.Errorf("a request left the server: %s", u)
		}
	}
	for _, p := range problems {
		t.Errorf("page: %s", p)
	}
}

package graph_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium returns the path of a Chromium binary, or "" when none is
// installed.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestGraphiQLInBrowser loads GraphiQL from the service's HTTP server in
// headless Chromium, runs { hello }, then a subscription over the WebSocket
// with the admin's key in the Headers tab, and receives an event. The
// browser may make no request outside the server and log no error (a CSP
// violation included).
func TestGraphiQLInBrowser(t *testing.T) {
	path := chromium()
	if path == "" {
		t.Skip("browser test skipped: Chromium not found (apt-get install chromium)")
	}
	s := mustServer(t, backends()[0].open(t, nil))
	base, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	alloc, cancel := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()

	var mu sync.Mutex
	var requests, problems []string
	err = chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		case *network.EventWebSocketCreated:
			requests = append(requests, ev.URL)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError && !strings.HasSuffix(ev.Entry.URL, "/favicon.ico") {
				problems = append(problems, string(ev.Entry.Source)+": "+ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		}
	})
	if err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	run, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fail := func(what string, err error) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("browser: %s: %v (requests %v, problems %v)", what, err, requests, problems)
	}
	response := chromedp.CSS(`.graphiql-response`)
	err = chromedp.Do(run,
		chromedp.Navigate(s.url+"/graphql"),
		chromedp.WaitVisible(chromedp.CSS(`.graphiql-query-editor .CodeMirror`)),
		chromedp.Click(chromedp.CSS(`.graphiql-execute-button`)),
		chromedp.Poll[chromedp.Void](`document.querySelector('.graphiql-response').innerText.includes('Hello, world!')`),
	)
	if err != nil {
		fail("run { hello }", err)
	}

	// A subscription: the admin's key in the Headers tab, which GraphiQL
	// sends in connection_init.
	headers, _ := json.Marshal(map[string]string{"X-API-Key": s.admin})
	setEditors := `(() => {
		const cm = sel => document.querySelector(sel).CodeMirror;
		cm('.graphiql-query-editor .CodeMirror').setValue('subscription { userCreated { name } }');
		const tools = document.querySelectorAll('.graphiql-editor-tool .CodeMirror');
		tools[tools.length - 1].CodeMirror.setValue(` + "`" + string(headers) + "`" + `);
		return tools.length;
	})()`
	err = chromedp.Do(run, chromedp.Click(chromedp.Search(`//button[normalize-space(.)='Headers']`)))
	if err != nil {
		fail("open the Headers tab", err)
	}
	if _, err := chromedp.Run(run, chromedp.Evaluate[int](setEditors)); err != nil {
		fail("fill the editors", err)
	}
	if err := chromedp.Do(run, chromedp.Click(chromedp.CSS(`.graphiql-execute-button`))); err != nil {
		fail("start the subscription", err)
	}
	waitFor(t, "the browser's subscription", func() bool { return s.hub.Subscribers("userCreated") == 1 })
	s.hub.Deliver(userEvent(42, "From the hub"))
	err = chromedp.Do(run,
		chromedp.Poll[chromedp.Void](`document.querySelector('.graphiql-response').innerText.includes('From the hub')`),
	)
	if err != nil {
		text, _ := chromedp.Run(run, chromedp.Text(response))
		fail("receive the event (response pane: "+text+")", err)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, r := range requests {
		if strings.HasPrefix(r, "data:") || strings.HasPrefix(r, "blob:") {
			continue // inline: fonts and images of the stylesheet
		}
		u, err := url.Parse(r)
		if err != nil || u.Host != base.Host || (u.Scheme != "http" && u.Scheme != "ws") {
			t.Errorf("the browser requested %.200s, outside the server", r)
		}
	}
	if !containsPrefix(requests, "ws://"+base.Host+"/graphql") {
		t.Errorf("requests = %v, want the WebSocket", requests)
	}
	for _, p := range problems {
		t.Errorf("browser logged %s", p)
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// Package browser starts headless Chromium (Debian's chromium package,
// which .ci/deps installs) under chromedp, for the inspector's browser
// tests and its screenshot command. Chromium runs with the flags this
// machine's closed network needs (no background networking, component
// updates or sync), no sandbox (tests run as root) and a fresh profile.
package browser

import (
	"context"
	"errors"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// Path finds Chromium: $BRIDGE_CHROMIUM, else chromium (or
// chromium-browser) on PATH.
func Path() (string, error) {
	if p := os.Getenv("BRIDGE_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH: install Debian's chromium package (.ci/deps does)")
}

// Start starts Chromium with its profile in dir (a fresh, empty folder)
// and returns a chromedp context for one tab; cancel closes the browser.
// The browser lives until cancel or ctx's end, whichever is first.
func Start(ctx context.Context, dir string, width, height int) (context.Context, context.CancelFunc, error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // start the browser now: a failure is Start's
		bcancel()
		acancel()
		return nil, nil, err
	}
	return bctx, func() { bcancel(); acancel() }, nil
}

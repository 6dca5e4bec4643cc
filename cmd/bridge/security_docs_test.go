package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/server"
)

// TestSecurityDocs: every test and benchmark that docs/security.md and
// the README's Security section name as holding a promise exists in the
// tree (a renamed or deleted test leaves a promise held by nothing), and
// the defaults the README states are the code's.
func TestSecurityDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	funcs := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark)\w+)\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			funcs[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, _, _ := strings.Cut(string(readme[strings.Index(string(readme), "\n## Security\n")+1:]), "\n## ")
	if !strings.Contains(section, "| promise |") {
		t.Fatalf("the README has no Security section with a table of promises")
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`((?:Test|Benchmark)[A-Z]\\w*)`")
	for what, text := range map[string]string{"README.md Security": section, "docs/security.md": string(doc)} {
		n := 0
		for _, m := range named.FindAllStringSubmatch(text, -1) {
			n++
			if !funcs[m[1]] {
				t.Errorf("%s names %s, which no test file declares", what, m[1])
			}
		}
		if n < 10 {
			t.Errorf("%s names only %d tests", what, n)
		}
	}

	for _, want := range []string{
		"**" + itoa(server.DefaultMaxConnections) + "** client connections",
		"newest **" + itoa(bridge.DefaultLiveEvents) + "** events",
		"within **" + secs(inbound.DefaultBodyTimeout) + "** (`body_timeout`",
		"after **" + secs(inbound.DefaultWriteTimeout) + "** (`write_timeout`)",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the README's Security section does not say %q, the code's default", want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func secs(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) + " s" }

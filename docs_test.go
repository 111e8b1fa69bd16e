package main

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docFiles are the documents a user reads: the README, every page under
// docs/ and the benchmarks' index (the reports beside it are generated
// and name what they measured at the time).
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "benchmarks/README.md"}
	more, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return files
}

// definedTests is every Test, Fuzz and Benchmark function of the
// repository's _test.go files.
func definedTests(t *testing.T) map[string]bool {
	t.Helper()
	def := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)\w+)\(`)
	names := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range def.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// registeredFlags asks every command's flag set for its flags, by running
// it with -h as `lakehouse help <command>` does.
func registeredFlags(t *testing.T) map[string][]string {
	t.Helper()
	flagLine := regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
	byFlag := map[string][]string{}
	for name, c := range commands {
		var out bytes.Buffer
		_ = c.run(context.Background(), []string{"-h"}, &out, &out)
		ms := flagLine.FindAllStringSubmatch(out.String(), -1)
		if len(ms) == 0 && name != "status" {
			t.Logf("%s -h lists no flags", name)
		}
		for _, m := range ms {
			byFlag[m[1]] = append(byFlag[m[1]], name)
		}
	}
	return byFlag
}

// foreignFlags are flags of other programs the docs show in their commands
// (spark-sql, systemctl, the go tool): not the appliance's.
var foreignFlags = map[string]bool{
	"packages": true, "conf": true, // spark-sql
	"now":         true, // systemctl enable --now
	"update-docs": true, // this package's tests
}

// codeSpans returns the inline code spans and the fenced code blocks of a
// markdown document: where it names commands.
func codeSpans(doc string) []string {
	var spans []string
	var block strings.Builder
	inBlock := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(nil, 1<<20)
	inline := regexp.MustCompile("``(.+?)``|`([^`]+)`")
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if inBlock {
				spans = append(spans, block.String())
				block.Reset()
			}
			inBlock = !inBlock
			continue
		}
		if inBlock {
			block.WriteString(line + "\n")
			continue
		}
		for _, m := range inline.FindAllStringSubmatch(line, -1) {
			spans = append(spans, strings.TrimSpace(m[1]+m[2]))
		}
	}
	return spans
}

// headingAnchors are the anchors GitHub gives a markdown file's headings.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		h = strings.ToLower(drop.ReplaceAllString(h, ""))
		anchors[strings.ReplaceAll(h, " ", "-")] = true
	}
	return anchors
}

// TestDocsNameWhatExists fails when the README, a page of docs/ or the
// benchmarks' index names a test, a benchmark or a fuzz target that no
// _test.go defines, a --flag that no command registers, a command that
// does not exist (`lakehouse <command>`, `go run . <command>`), a relative
// link to a file or heading that does not exist, or a source path
// (`dir/file.go`) that is not in the repository.
func TestDocsNameWhatExists(t *testing.T) {
	tests := definedTests(t)
	flags := registeredFlags(t)
	testRef := regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark)[A-Z0-9_]\w*`)
	flagRef := regexp.MustCompile(`(?:^|[\s(\x60\[|])--([a-z][a-z0-9-]*)`)
	cmdRef := regexp.MustCompile(`(?:\blakehouse|\bgo run \.)[ \t]+([a-z][a-z-]*)\b`)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	srcPath := regexp.MustCompile(`^[a-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.(?:go|md|sql|json)$`)
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(b)
		for _, name := range testRef.FindAllString(doc, -1) {
			if !tests[name] {
				t.Errorf("%s names %s, which no _test.go defines", file, name)
			}
		}
		for _, m := range flagRef.FindAllStringSubmatch(doc, -1) {
			if flags[m[1]] == nil && !foreignFlags[m[1]] && programFlags[m[1]] == nil {
				t.Errorf("%s names --%s, which no command registers", file, m[1])
			}
		}
		generated := file == "docs/flags.md" || file == "docs/tables.md" // kept true by their own tests; help text is prose
		for _, span := range codeSpans(doc) {
			for _, m := range cmdRef.FindAllStringSubmatch(span, -1) {
				if generated {
					break
				}
				if commands[m[1]] == nil && m[1] != "help" {
					t.Errorf("%s names the command %q (in %q), which does not exist", file, m[1], m[0])
				}
			}
			if srcPath.MatchString(span) && !strings.Contains(span, "<") {
				if _, err := os.Stat(span); err != nil {
					t.Errorf("%s names %s, which is not in the repository", file, span)
				}
			}
		}
		for _, m := range link.FindAllStringSubmatch(doc, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.Join(filepath.Dir(file), path)
			}
			tb, err := os.ReadFile(resolved)
			if err != nil {
				if st, serr := os.Stat(resolved); serr == nil && st.IsDir() {
					continue
				}
				t.Errorf("%s links to %s, which does not exist", file, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(resolved, ".md") && !headingAnchors(string(tb))[anchor] {
				t.Errorf("%s links to %s: %s has no heading #%s", file, target, resolved, anchor)
			}
		}
	}
}

// TestDocsNameWhatExistsCatches: the checks above find what they look for
// (a test that only ever passes checks nothing).
func TestDocsNameWhatExistsCatches(t *testing.T) {
	if !definedTests(t)["TestDocsNameWhatExists"] {
		t.Error("definedTests does not find this file's own tests")
	}
	flags := registeredFlags(t)
	for _, f := range []string{"data", "retention-bytes", "http-max-conns", "drop", "history"} {
		if flags[f] == nil {
			t.Errorf("registeredFlags does not find --%s", f)
		}
	}
	if flags["no-such-flag"] != nil {
		t.Error("registeredFlags finds a flag nobody registers")
	}
	spans := codeSpans("a `lakehouse query` b\n```sh\ngo run . demo\n```\n")
	if !slices.Equal(spans, []string{"lakehouse query", "go run . demo\n"}) {
		t.Errorf("codeSpans: %q", spans)
	}
	if a := headingAnchors("## Hop by hop: broker → bronze (exactly once)\n"); !a["hop-by-hop-broker--bronze-exactly-once"] {
		t.Errorf("headingAnchors: %v", a)
	}
}

// TestReadmeFitsOnAFewScreens: the README is the front page, not the
// manual: at most 200 lines, none longer than 400 characters. The depth
// lives in docs/.
func TestReadmeFitsOnAFewScreens(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 200 {
		t.Errorf("README.md has %d lines; at most 200 (move the depth to docs/)", len(lines))
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > 400 {
			t.Errorf("README.md:%d is %d characters long; at most 400", i+1, n)
		}
	}
}

// flagsReference renders docs/flags.md: every command's summary and its
// flags with their defaults, as `lakehouse help <command>` prints them.
// The LAKEHOUSE_* variables are cleared first: some flags take their
// default from them.
func flagsReference(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "LAKEHOUSE_") {
			t.Setenv(k, "")
		}
	}
	var b strings.Builder
	b.WriteString("# Flags of every command\n\n" +
		"Generated from the commands' flag sets (`go test -run TestFlagsReference . -update-docs`);\n" +
		"`TestFlagsReference` fails when this file and the code differ. What each command is for, with\n" +
		"examples: [commands.md](commands.md). Flags go after the command: `lakehouse run --data DIR`.\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		var out bytes.Buffer
		_ = commands[n].run(context.Background(), []string{"-h"}, &out, &out)
		b.WriteString("\n## " + n + "\n\n" + commands[n].summary + ".\n\n```\n" + strings.TrimRight(out.String(), "\n") + "\n```\n")
	}
	return b.String()
}

// TestFlagsReference: docs/flags.md lists every command and flag as the
// code registers them.
func TestFlagsReference(t *testing.T) {
	want := flagsReference(t)
	if *updateDocs {
		if err := os.WriteFile("docs/flags.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("docs/flags.md")
	if err != nil || string(got) != want {
		t.Fatalf("docs/flags.md is not what the commands register (%v): run `go test -run TestFlagsReference . -update-docs`", err)
	}
}

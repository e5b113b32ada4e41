package main

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dockerfile is the build stage of deploy/Dockerfile as the test reads it.
type dockerfile struct {
	goImage string // the tag of the golang image, "1.26"
	workdir string // WORKDIR, where COPY . . puts the build context
	run     string // the RUN line that builds the binary
	binary  string // the path the final stage copies from the build stage
}

// readDockerfile reads the few instructions the build stage has, with line continuations joined; an
// instruction it does not expect is an error, so a Dockerfile that grows one is read again here.
func readDockerfile(t *testing.T, name string) dockerfile {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var d dockerfile
	var lines []string
	sc := bufio.NewScanner(f)
	for cont := ""; sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if l, ok := strings.CutSuffix(line, "\\"); ok {
			cont += l + " "
			continue
		}
		lines, cont = append(lines, cont+line), ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	stage := 0
	for _, line := range lines {
		instr, args, _ := strings.Cut(line, " ")
		args = strings.TrimSpace(args)
		switch strings.ToUpper(instr) {
		case "FROM":
			stage++
			if m := regexp.MustCompile(`^golang:(\d+\.\d+)\S* AS build$`).FindStringSubmatch(args); stage == 1 && m != nil {
				d.goImage = m[1]
			}
		case "WORKDIR":
			d.workdir = args
		case "COPY":
			if m := regexp.MustCompile(`^--from=build (\S+) `).FindStringSubmatch(args); m != nil {
				d.binary = m[1]
			} else if args != ". ." {
				t.Fatalf("%s: COPY %s: the test knows COPY . . (the repository) and COPY --from=build", name, args)
			}
		case "RUN":
			if d.run != "" {
				t.Fatalf("%s: a second RUN %q; the test runs one", name, args)
			}
			d.run = args
		case "USER", "ENTRYPOINT":
		default:
			t.Fatalf("%s: %s: an instruction the test does not know", name, instr)
		}
	}
	if d.goImage == "" || d.workdir == "" || d.run == "" || d.binary == "" {
		t.Fatalf("%s: read %+v; want a build stage FROM golang:X.Y AS build with WORKDIR, RUN and a COPY --from=build", name, d)
	}
	return d
}

// TestDockerfileBuild runs deploy/Dockerfile's build step as the Dockerfile has it, in the repository (the
// build context), with only the output path moved into a temporary folder: the same package, flags and
// environment. What it builds must be the static binary the distroless image can run, and the golang image
// must be new enough for the go directive of the module.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the explainer")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	d := readDockerfile(t, filepath.Join("deploy", "Dockerfile"))

	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(data)
	if goLine == nil {
		t.Fatal("go.mod: no go directive")
	}
	if v := string(goLine[1]); !strings.HasPrefix(v, d.goImage+".") && v != d.goImage {
		t.Errorf("Dockerfile builds with golang:%s, go.mod says go %s", d.goImage, v)
	}

	out := filepath.Join(t.TempDir(), "explainer")
	dir, env := repo, os.Environ()
	ran := false
	for _, step := range strings.Split(d.run, "&&") {
		words := strings.Fields(step)
		if len(words) == 2 && words[0] == "cd" {
			dir = filepath.Join(dir, words[1])
			continue
		}
		for len(words) > 0 && strings.Contains(words[0], "=") {
			env, words = append(env, words[0]), words[1:]
		}
		if len(words) < 2 || words[0] != "go" || words[1] != "build" {
			t.Fatalf("Dockerfile: RUN %s: a step the test does not know: %q", d.run, step)
		}
		for i, w := range words {
			if w == "-o" && i+1 < len(words) && words[i+1] == d.binary {
				words[i+1] = out
			}
		}
		if !strings.Contains(strings.Join(words, " "), out) {
			t.Fatalf("Dockerfile: RUN %s does not write %s, which the final stage copies", d.run, d.binary)
		}
		cmd := exec.Command(words[0], words[1:]...)
		cmd.Dir, cmd.Env = dir, env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("Dockerfile's %s in %s: %v\n%s", strings.Join(words, " "), dir, err, b)
		}
		ran = true
	}
	if !ran {
		t.Fatalf("Dockerfile: RUN %s has no go build", d.run)
	}

	// distroless/static has no C library: the binary must have no interpreter to load one.
	ef, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary the Dockerfile builds is dynamically linked; distroless/static cannot run it")
		}
	}
	bi, err := exec.Command("go", "version", "-m", out).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\tpath\tgithub.com/dralloc/dralloc/examples/explainer\n", "\tbuild\tCGO_ENABLED=0\n"} {
		if !strings.Contains(string(bi), want) {
			t.Errorf("go version -m: no %q in\n%s", want, bi)
		}
	}
	if b, err := exec.Command(out, "-h").CombinedOutput(); !strings.Contains(string(b), "-leader-elect") {
		t.Errorf("%s -h: %v\n%s", out, err, b)
	}
}

package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/fuzz/watchdog"
)

// FuzzRun feeds arbitrary bytes to dractl's input path, `dractl explain -f -` with the input
// bounded (--max-bytes 1 MiB, --max-pods 100), through watchdog.Run: it must end in bounded time,
// never with status 2 (dractl's own failure: a panic), and a bad input (status 3) must say what is
// wrong on stderr. The seed corpus (testdata/fuzz/FuzzRun) has the hostile inputs of the hardening
// issue: an alias bomb, nested aliases, an alias cycle, 40 Deployments of 100,000 replicas, 20
// DaemonSets on 20 Nodes, workloads with alike names, negative counts and ordinals, pods without
// names.
func FuzzRun(f *testing.F) {
	for _, file := range []string{"testdata/reasons/cluster.yaml", "testdata/gang/cluster.yaml"} {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(nodeAndPod))
	f.Fuzz(func(t *testing.T, data []byte) {
		watchdog.Run(t, data, func(context.Context) {
			var out, errOut bytes.Buffer
			code := run([]string{"explain", "-f", "-", "--max-bytes", "1048576", "--max-pods", "100"}, bytes.NewReader(data), &out, &errOut)
			switch code {
			case exitOK, exitNotFit:
			case exitBadInput:
				if !strings.HasPrefix(errOut.String(), "dractl explain: ") {
					t.Fatalf("bad input without a reason, stderr %q", errOut.String())
				}
			default:
				t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
			}
		})
	})
}

package lab

import (
	"strings"
	"testing"
)

func TestSplitTopicsBatch(t *testing.T) {
	line := "\tTopic: a\tTopicId: x\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n"
	ok := "=== run 0\n" + line + "=== status 0 0\n=== run 1\n=== status 1 0\n"
	outs, err := splitTopicsBatch(ok, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0] != line || outs[1] != "" {
		t.Fatalf("runs = %q", outs)
	}
	for name, tc := range map[string]struct {
		out  string
		runs int
		want string
	}{
		"a run failed":     {"=== run 0\nError while executing topic command\n=== status 0 1\n", 1, "status 1"},
		"a run missing":    {"=== run 0\n=== status 0 0\n", 2, "1 of 2 runs"},
		"cut off mid-run":  {"=== run 0\n" + line, 1, "0 of 1 runs"},
		"text outside":     {"oops\n=== run 0\n=== status 0 0\n", 1, "outside a run"},
		"runs out of turn": {"=== run 1\n=== status 1 0\n", 1, "outside a run"},
	} {
		if _, err := splitTopicsBatch(tc.out, tc.runs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", name, err, tc.want)
		}
	}
}

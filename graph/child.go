package graph

import (
	"os"
	"os/exec"
	"regexp"
)

// childEnv marks a process started by RunChild; its value names the test.
const childEnv = "FLASHGORGON_TEST_CHILD"

// IsChild reports whether this process is the child that RunChild started
// to run the test named test.
func IsChild(test string) bool { return os.Getenv(childEnv) == test }

// RunChild runs the test named test (a top-level test function of the
// running test binary, subtests included) again in a child process, where
// IsChild(test) is true, and returns the child's combined output and its
// exit error.
//
// The TapeMachine runs a graph in a goroutine of its own, where a panic
// cannot be recovered and ends the process. A test that must report such a
// panic as a failure, rather than die of it, runs the machine in a child:
//
//	func TestX(t *testing.T) {
//		if graph.IsChild(t.Name()) {
//			… run the machines, t.Error on a wrong result …
//			return
//		}
//		if out, err := graph.RunChild(t.Name()); err != nil {
//			t.Fatalf("child: %v\n%s", err, out)
//		}
//	}
func RunChild(test string) ([]byte, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(test)+"$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+test)
	return cmd.CombinedOutput()
}

package ptxhdr

import (
	"strings"
	"testing"
)

// TestRetarget checks the marking of the Hopper module's PTX: .target becomes sm_90a, an
// older .version becomes 8.0, a newer one stays, other modules are untouched, and PTX without
// the lines is an error.
func TestRetarget(t *testing.T) {
	h := TargetOf("attention_hopper")
	for _, c := range []struct{ in, want string }{
		{"//x\n.version 7.8\n.target sm_90\n.address_size 64\n", "//x\n.version 8.0\n.target sm_90a\n.address_size 64\n"},
		{".version 8.7\n.target sm_90\n", ".version 8.7\n.target sm_90a\n"},
		{".version 10.0\n.target sm_90\n", ".version 10.0\n.target sm_90a\n"},
	} {
		got, err := h.Retarget([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("Retarget(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := h.Retarget([]byte(".version 7.8\n")); err == nil || !strings.Contains(err.Error(), "sm_90a") {
		t.Errorf("Retarget without .target: err = %v", err)
	}
	in := ".version 7.8\n.target sm_80\n"
	if got, err := TargetOf("attention_mma").Retarget([]byte(in)); err != nil || string(got) != in {
		t.Errorf("attention_mma retargeted: %q, %v", got, err)
	}
	if TargetOf("attention_hopper_bulk") != h {
		t.Errorf("attention_hopper_bulk's target %+v, attention_hopper's %+v", TargetOf("attention_hopper_bulk"), h)
	}
	if f := h.Flags([]string{"-ptx"}); f != "-ptx -arch=compute_90; then .target sm_90a, .version >= 8.0" {
		t.Errorf("Flags = %q", f)
	}
}

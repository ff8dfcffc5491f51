package cuda

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDriverConstants checks the CUresult and enum values driver.go copies from cuda.h against
// a cuda.h, when one is installed (the package needs none: it skips otherwise). CUDA_HOME,
// /usr/local/cuda and /usr/include are searched.
func TestDriverConstants(t *testing.T) {
	var header string
	for _, dir := range []string{os.Getenv("CUDA_HOME"), "/usr/local/cuda", "/usr"} {
		if dir == "" {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, "include", "cuda.h")); err == nil {
			header = string(b)
			t.Logf("checking against %s", filepath.Join(dir, "include", "cuda.h"))
			break
		}
	}
	if header == "" {
		t.Skip("no cuda.h installed (CUDA_HOME, /usr/local/cuda/include, /usr/include)")
	}
	values := enumValues(header)
	for name, v := range map[string]int{
		"CUDA_SUCCESS":                                          cuSuccess,
		"CUDA_ERROR_OUT_OF_MEMORY":                              cuErrOutOfMemory,
		"CUDA_ERROR_ECC_UNCORRECTABLE":                          cuErrEccUncorrectable,
		"CUDA_ERROR_ILLEGAL_ADDRESS":                            cuErrIllegalAddress,
		"CUDA_ERROR_LAUNCH_TIMEOUT":                             cuErrLaunchTimeout,
		"CUDA_ERROR_ASSERT":                                     cuErrAssert,
		"CUDA_ERROR_HARDWARE_STACK_ERROR":                       cuErrHardwareStackError,
		"CUDA_ERROR_ILLEGAL_INSTRUCTION":                        cuErrIllegalInstruction,
		"CUDA_ERROR_MISALIGNED_ADDRESS":                         cuErrMisalignedAddress,
		"CUDA_ERROR_INVALID_ADDRESS_SPACE":                      cuErrInvalidAddressSpace,
		"CUDA_ERROR_INVALID_PC":                                 cuErrInvalidPC,
		"CUDA_ERROR_LAUNCH_FAILED":                              cuErrLaunchFailed,
		"CUDA_ERROR_NOT_SUPPORTED":                              cuErrNotSupported,
		"CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT":              attrMultiprocessors,
		"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR":          attrComputeMajor,
		"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR":          attrComputeMinor,
		"CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": attrSharedOptin,
		"CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES":       funcAttrMaxDynamicShared,
		"CU_JIT_ERROR_LOG_BUFFER":                               jitErrorLogBuffer,
		"CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES":                    jitErrorLogBufferSizeBytes,
		"CU_EVENT_DEFAULT":                                      eventDefault,
	} {
		got, ok := values[name]
		if !ok {
			t.Errorf("cuda.h: no value found for %s", name)
		} else if got != v {
			t.Errorf("cuda.h: %s = %d, driver.go has %d", name, got, v)
		}
	}
}

var (
	enumRE     = regexp.MustCompile(`(?s)enum\s+\w*\s*\{(.*?)\}`)
	enumItemRE = regexp.MustCompile(`^(\w+)\s*(?:=\s*(.+))?$`)
)

// enumValues returns the values of the enumerators of a C header's enums: explicit (a number
// or an earlier enumerator) or implicit (one more than the previous); an enumerator whose
// value it cannot work out is left out, and so are the implicit ones after it.
func enumValues(header string) map[string]int {
	src := blockComment.ReplaceAllString(lineComment.ReplaceAllString(header, ""), "")
	values := map[string]int{}
	for _, m := range enumRE.FindAllStringSubmatch(src, -1) {
		next, known := 0, true
		for _, item := range strings.Split(m[1], ",") {
			item = strings.Join(strings.Fields(item), " ")
			e := enumItemRE.FindStringSubmatch(item)
			if e == nil {
				continue
			}
			if e[2] != "" {
				expr := strings.TrimSpace(e[2])
				if v, err := strconv.ParseInt(expr, 0, 64); err == nil {
					next, known = int(v), true
				} else if v, ok := values[expr]; ok {
					next, known = v, true
				} else {
					known = false
				}
			}
			if known {
				values[e[1]] = next
			}
			next++
		}
	}
	return values
}

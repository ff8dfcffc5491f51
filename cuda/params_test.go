package cuda

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The kernel parameter structs are defined in Go (params.g); kernels/params.h must declare
// the same structs for the kernels, which read the Go value's bytes as the C struct, so any
// difference is silent garbage. These tests check the header against the Go definitions
// without a C compiler: the header is parsed, its fields are laid out by C's rules (each field
// at the next multiple of its alignment, the struct padded to its largest alignment) and
// compared, in order, with the Go fields' names, types, offsets and sizes from reflect.

// paramStructs pairs each Go params struct with its params.h name.
var paramStructs = []struct {
	c string
	g reflect.Type
}{
	{"fg_softmax_params", reflect.TypeFor[softmaxParams]()},
	{"fg_attn_params", reflect.TypeFor[attnParams]()},
	{"fg_fill_params", reflect.TypeFor[fillParams]()},
}

// cTypes gives the size (and alignment) of the C types params.h may use, and the Go kind that
// carries each.
var cTypes = map[string]struct {
	size int
	kind reflect.Kind
}{
	"uint64_t": {8, reflect.Uint64},
	"int64_t":  {8, reflect.Int64},
	"uint32_t": {4, reflect.Uint32},
	"int32_t":  {4, reflect.Int32},
	"double":   {8, reflect.Float64},
	"float":    {4, reflect.Float32},
}

// cField is one field of a C struct as laid out by C's rules.
type cField struct {
	name, ctype  string
	offset, size int
}

var (
	lineComment  = regexp.MustCompile(`//[^\n]*`)
	blockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	typedefRE    = regexp.MustCompile(`typedef\s+struct\s*\{([^}]*)\}\s*(\w+)\s*;`)
	declRE       = regexp.MustCompile(`^(\w+)\s+(\w+(?:\s*,\s*\w+)*)$`)
	defineRE     = regexp.MustCompile(`(?m)^#define\s+(FG_\w+)\s+(-?\d+)\s*$`)
)

// parseStructs returns the fields of every typedef struct of a header, laid out by C's rules,
// and the struct sizes.
func parseStructs(header string) (map[string][]cField, map[string]int, error) {
	src := blockComment.ReplaceAllString(lineComment.ReplaceAllString(header, ""), "")
	fields, sizes := map[string][]cField{}, map[string]int{}
	for _, m := range typedefRE.FindAllStringSubmatch(src, -1) {
		var fs []cField
		off, maxAlign := 0, 1
		for _, decl := range strings.Split(m[1], ";") {
			decl = strings.Join(strings.Fields(decl), " ")
			if decl == "" {
				continue
			}
			d := declRE.FindStringSubmatch(decl)
			if d == nil {
				return nil, nil, fmt.Errorf("%s: cannot parse declaration %q", m[2], decl)
			}
			t, ok := cTypes[d[1]]
			if !ok {
				return nil, nil, fmt.Errorf("%s: C type %q is not one of the fixed-size types the Go side can mirror", m[2], d[1])
			}
			for _, name := range strings.Split(d[2], ",") {
				off = (off + t.size - 1) / t.size * t.size
				fs = append(fs, cField{strings.TrimSpace(name), d[1], off, t.size})
				off += t.size
				maxAlign = max(maxAlign, t.size)
			}
		}
		fields[m[2]] = fs
		sizes[m[2]] = (off + maxAlign - 1) / maxAlign * maxAlign
	}
	return fields, sizes, nil
}

// snake turns a Go field name into the C one: keyLengths → key_lengths.
func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// compareStruct lists the differences between C struct cname of the parsed header and the Go
// struct g.
func compareStruct(fields map[string][]cField, sizes map[string]int, cname string, g reflect.Type) []string {
	cf, ok := fields[cname]
	if !ok {
		return []string{fmt.Sprintf("params.h has no struct %s (Go %s)", cname, g.Name())}
	}
	var diffs []string
	var gf []reflect.StructField
	for i := range g.NumField() {
		if f := g.Field(i); f.Name != "_" {
			gf = append(gf, f)
		}
	}
	if len(gf) != len(cf) {
		diffs = append(diffs, fmt.Sprintf("%s has %d fields, Go %s %d", cname, len(cf), g.Name(), len(gf)))
	}
	for i := range min(len(gf), len(cf)) {
		f, c := gf[i], cf[i]
		// C names a field that is a C keyword with a trailing underscore (do_).
		if snake(f.Name) != strings.TrimSuffix(c.name, "_") {
			diffs = append(diffs, fmt.Sprintf("%s field %d is %s, Go %s.%s", cname, i, c.name, g.Name(), f.Name))
		}
		if want := cTypes[c.ctype].kind; f.Type.Kind() != want {
			diffs = append(diffs, fmt.Sprintf("%s.%s is %s, Go %s.%s is %s (want a %s)", cname, c.name, c.ctype, g.Name(), f.Name, f.Type, want))
		}
		if int(f.Offset) != c.offset || int(f.Type.Size()) != c.size {
			diffs = append(diffs, fmt.Sprintf("%s.%s at offset %d size %d, Go %s.%s at offset %d size %d",
				cname, c.name, c.offset, c.size, g.Name(), f.Name, f.Offset, f.Type.Size()))
		}
	}
	if int(g.Size()) != sizes[cname] {
		diffs = append(diffs, fmt.Sprintf("%s is %d bytes, Go %s %d", cname, sizes[cname], g.Name(), g.Size()))
	}
	return diffs
}

// TestParamsHeader checks kernels/params.h against the Go params structs, and its FG_* kind
// constants against SoftmaxKind's values.
func TestParamsHeader(t *testing.T) {
	b, err := os.ReadFile("kernels/params.h")
	if err != nil {
		t.Fatal(err)
	}
	fields, sizes, err := parseStructs(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != len(paramStructs) {
		t.Errorf("params.h declares %d structs, the Go side %d", len(fields), len(paramStructs))
	}
	for _, s := range paramStructs {
		for _, d := range compareStruct(fields, sizes, s.c, s.g) {
			t.Error(d)
		}
	}
	defines := map[string]int{}
	for _, m := range defineRE.FindAllStringSubmatch(string(b), -1) {
		defines[m[1]], _ = strconv.Atoi(m[2])
	}
	for name, k := range map[string]SoftmaxKind{"FG_SOFTMAX": Softmax, "FG_LOG_SOFTMAX": LogSoftmax, "FG_LOG_SUM_EXP": LogSumExp} {
		if v, ok := defines[name]; !ok || v != int(k) {
			t.Errorf("params.h: %s = %d (defined %v), want %d (%v)", name, v, ok, int32(k), k)
		}
	}
}

// TestParamsHeaderCheckFails checks that the comparison catches the mistakes it is for: each
// header below differs from the Go struct in one way and must be reported.
func TestParamsHeaderCheckFails(t *testing.T) {
	g := reflect.TypeFor[fillParams]()
	good := "typedef struct {\n  uint64_t x;\n  int64_t n; // count\n  uint64_t seed;\n  double scale;\n  int32_t f64;\n  int32_t reserved;\n} fg_fill_params;\n"
	fields, sizes, err := parseStructs(good)
	if err != nil {
		t.Fatal(err)
	}
	if d := compareStruct(fields, sizes, "fg_fill_params", g); len(d) != 0 {
		t.Fatalf("the matching header is reported: %v", d)
	}
	for _, c := range []struct{ name, from, to string }{
		{"fields swapped", "uint64_t seed;\n  double scale;", "double scale;\n  uint64_t seed;"},
		{"field renamed", "int64_t n;", "int64_t count;"},
		{"type widened", "int32_t f64;", "int64_t f64;"},
		{"float for double", "double scale;", "float scale;"},
		{"field missing", "  int32_t reserved;\n", ""},
		{"field added", "int32_t reserved;", "int32_t reserved;\n  int32_t extra;"},
		{"signedness", "int64_t n;", "uint64_t n;"},
		{"narrower field", "uint64_t x;", "int32_t x;"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(good, c.from, c.to, 1)
			if bad == good {
				t.Fatalf("the mutation %q → %q did not apply", c.from, c.to)
			}
			fields, sizes, err := parseStructs(bad)
			if err != nil {
				t.Fatal(err)
			}
			d := compareStruct(fields, sizes, "fg_fill_params", g)
			if len(d) == 0 {
				t.Errorf("header with %s not reported:\n%s", c.name, bad)
			}
			t.Logf("%s: %v", c.name, d)
		})
	}
	// C's padding: b goes to offset 8, c to 16, and the struct is padded to 24 bytes, as Go
	// lays out the same fields.
	type padded struct {
		a int32
		b float64
		c int32
	}
	fields, sizes, err = parseStructs("typedef struct {\n  int32_t a;\n  double b;\n  int32_t c;\n} padded;")
	if err != nil {
		t.Fatal(err)
	}
	if d := compareStruct(fields, sizes, "padded", reflect.TypeFor[padded]()); len(d) != 0 || sizes["padded"] != 24 || fields["padded"][1].offset != 8 {
		t.Errorf("padded struct: %v; C size %d, b at %d (want 24, 8)", d, sizes["padded"], fields["padded"][1].offset)
	}
	if _, _, err := parseStructs("typedef struct { long x; } fg_x;"); err == nil {
		t.Errorf("a C type of platform-dependent size is accepted")
	}
}

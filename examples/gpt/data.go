package main

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// unk stands for every character outside the vocabulary.
const unk = '\uFFFD'

// readCorpus returns the training text: the file at path, or, when path is
// empty, Go source files of the standard library (found through
// `go env GOROOT`), at most maxBytes of them.
func readCorpus(path string, maxBytes int) (text, source string, err error) {
	if path != "" {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			return "", "", fmt.Errorf("-data %s is a folder: give a text file", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", "", fmt.Errorf("reading -data file: %w", err)
		}
		if maxBytes > 0 && len(b) > maxBytes {
			b = b[:maxBytes]
		}
		return strings.ToValidUTF8(string(b), string(unk)), path, nil
	}
	root, err := goroot()
	if err != nil {
		return "", "", err
	}
	src := filepath.Join(root, "src")
	var files []string
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "vendor", "cmd":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", "", fmt.Errorf("listing the Go sources under %s: %w", src, err)
	}
	// A fixed pseudo-random order (by a hash of the path relative to src)
	// mixes packages, so that the held-out tail is not one package; it does
	// not depend on -seed, so every run sees the same corpus.
	rel := func(p string) uint64 {
		h := fnv.New64a()
		r, _ := filepath.Rel(src, p)
		h.Write([]byte(filepath.ToSlash(r)))
		return h.Sum64()
	}
	sort.Slice(files, func(i, j int) bool { return rel(files[i]) < rel(files[j]) })
	var sb strings.Builder
	for _, f := range files {
		if maxBytes > 0 && sb.Len() >= maxBytes {
			break
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", "", fmt.Errorf("reading %s: %w", f, err)
		}
		sb.Write(b)
		if !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		}
	}
	text = sb.String()
	if maxBytes > 0 && len(text) > maxBytes {
		text = text[:maxBytes]
	}
	return strings.ToValidUTF8(text, string(unk)), fmt.Sprintf("Go standard library sources in %s (%d files)", src, len(files)), nil
}

func goroot() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("finding the Go standard library (go env GOROOT): %w; pass -data FILE instead", err)
	}
	root := strings.TrimSpace(string(out))
	if root == "" {
		return "", errors.New("go env GOROOT printed nothing; pass -data FILE instead")
	}
	return root, nil
}

// vocab maps characters to token ids and back.
type vocab struct {
	runes []rune       // id → character
	ids   map[rune]int // character → id
	unkID int          // id of unk, or −1 when every character has its own id
}

// buildVocab keeps the maxSize most frequent characters of text (ties by code
// point); the others share the id of unk. maxSize ≤ 0 keeps every character.
func buildVocab(text string, maxSize int) *vocab {
	counts := map[rune]int{}
	for _, r := range text {
		counts[r]++
	}
	rs := make([]rune, 0, len(counts))
	for r := range counts {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		if counts[rs[i]] != counts[rs[j]] {
			return counts[rs[i]] > counts[rs[j]]
		}
		return rs[i] < rs[j]
	})
	if maxSize > 0 && len(rs) > maxSize {
		rs = append(rs[:maxSize-1], unk)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
	return newVocab(rs)
}

func newVocab(rs []rune) *vocab {
	v := &vocab{runes: rs, ids: map[rune]int{}, unkID: -1}
	for i, r := range rs {
		v.ids[r] = i
		if r == unk {
			v.unkID = i
		}
	}
	return v
}

func (v *vocab) size() int { return len(v.runes) }

// encode maps text to ids; a character outside the vocabulary becomes unk
// (an error when the vocabulary has no unk).
func (v *vocab) encode(text string) ([]int, error) {
	ids := make([]int, 0, utf8.RuneCountInString(text))
	for _, r := range text {
		id, ok := v.ids[r]
		if !ok {
			if v.unkID < 0 {
				return nil, fmt.Errorf("character %q is not in the vocabulary", r)
			}
			id = v.unkID
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (v *vocab) decode(ids []int) string {
	var sb strings.Builder
	for _, id := range ids {
		sb.WriteRune(v.runes[id])
	}
	return sb.String()
}

// unigramEntropy returns −Σ_c p(c)·ln p(c) over the ids' frequencies, in
// nats per character: the loss of the best model that ignores context.
func unigramEntropy(ids []int, size int) float64 {
	counts := make([]float64, size)
	for _, id := range ids {
		counts[id]++
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := c / float64(len(ids))
			h -= p * math.Log(p)
		}
	}
	return h
}

// windows fills tokens and targets with batch windows of seq characters of
// ids: targets are the tokens shifted by one. starts gives each window's
// first index.
func windows(ids []int, starts []int, seq int, tokens, targets []int) {
	for b, s := range starts {
		copy(tokens[b*seq:(b+1)*seq], ids[s:s+seq])
		copy(targets[b*seq:(b+1)*seq], ids[s+1:s+seq+1])
	}
}

// randomStarts draws batch window starts uniformly from ids.
func randomStarts(rng *rand.Rand, n, seq, batch int) []int {
	starts := make([]int, batch)
	for i := range starts {
		starts[i] = rng.Intn(n - seq)
	}
	return starts
}

// stepRNG is the random source of training step s: batches and dropout
// masks depend only on (seed, step), so a resumed run draws exactly what an
// uninterrupted one would.
func stepRNG(seed int64, step int) *rand.Rand {
	return rand.New(rand.NewSource(seed*1_000_003 + int64(step)))
}

// encodePrompt is encode for a user's prompt: a character outside the
// vocabulary becomes unk, or is dropped when there is no unk. An empty
// result starts from a newline (or id 0).
func (v *vocab) encodePrompt(text string) []int {
	var ids []int
	for _, r := range text {
		if id, ok := v.ids[r]; ok {
			ids = append(ids, id)
		} else if v.unkID >= 0 {
			ids = append(ids, v.unkID)
		}
	}
	if len(ids) == 0 {
		ids = []int{v.ids['\n']} // 0 when there is no newline either
	}
	return ids
}

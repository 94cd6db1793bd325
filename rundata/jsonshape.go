package rundata

import "fmt"

// jsonShape bounds what decoding a JSON document may cost before it is
// decoded: encoding/json allocates per value whatever the value's size in
// the text (a phase of run.json is 400 bytes in memory from the 3 bytes
// of "{},"), so a document's length alone does not bound its memory. The
// check is one pass over the bytes that allocates nothing.
type jsonShape struct {
	maxValues int            // values (members and elements) in all
	maxArray  int            // elements of any one array
	keyArray  map[string]int // tighter bounds on the arrays of top-level keys
}

// maxJSONDepth is the deepest nesting accepted; run.json nests 4 deep.
const maxJSONDepth = 32

// check returns why b exceeds the shape; it does not validate the JSON
// (the decoder does that after it).
func (s *jsonShape) check(b []byte) error {
	type frame struct {
		array bool
		n     int // elements so far (commas + 1 once one began)
		limit int
		name  string // the top-level key of a keyArray bound
	}
	var stack [maxJSONDepth]frame
	depth, values := 0, 0
	var key []byte  // the last key read at the top level
	keyPos := false // a string here would be a key of the top-level object
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch c {
		case '"':
			start := i + 1
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if keyPos && depth == 1 && i <= len(b) {
				key = b[start:min(i, len(b))]
			}
			keyPos = false
		case '{', '[':
			if depth == maxJSONDepth {
				return fmt.Errorf("nested more than %d deep", maxJSONDepth)
			}
			f := frame{array: c == '[', limit: s.maxArray}
			if l, ok := s.keyArray[string(key)]; ok && f.array && depth == 1 {
				f.limit, f.name = l, string(key)
			}
			stack[depth] = f
			depth++
			keyPos = c == '{' && depth == 1
		case ']', '}':
			if depth > 0 {
				depth--
			}
			keyPos = false
		case ',':
			values++
			if depth > 0 && stack[depth-1].array {
				stack[depth-1].n++
				if f := stack[depth-1]; f.n+1 > f.limit && f.name != "" {
					return fmt.Errorf("more than %d %s", f.limit, f.name)
				} else if f.n+1 > f.limit {
					return fmt.Errorf("an array of more than %d elements", f.limit)
				}
			}
			keyPos = depth == 1 && !stack[0].array
		case ':':
			values++ // a member: ',' counts only those after the first
		case ' ', '\t', '\r', '\n':
		default:
			keyPos = false
		}
		if values > s.maxValues {
			return fmt.Errorf("more than %d values", s.maxValues)
		}
	}
	return nil
}

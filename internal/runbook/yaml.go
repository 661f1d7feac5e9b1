package runbook

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Pos is a place in a book: its file, line and column (1-based).
type Pos struct {
	File   string
	Line   int
	Column int
}

func (p Pos) String() string {
	if p.File == "" {
		return fmt.Sprintf("%d:%d", p.Line, p.Column)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// BookError is a book that does not parse or is invalid (exit 2). It says
// where.
type BookError struct {
	Pos Pos
	Msg string
}

func (e *BookError) Error() string { return e.Pos.String() + ": " + e.Msg }

func errAt(p Pos, format string, args ...any) *BookError {
	return &BookError{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// node is one YAML value with the place it was written: a mapping (keys in
// written order), a sequence, or a scalar already turned into its JSON
// value (string, float64/int64, bool, nil).
type node struct {
	pos  Pos
	kind nodeKind
	keys []string
	vals map[string]*node
	kpos map[string]Pos
	seq  []*node
	val  any
}

type nodeKind int

const (
	kindScalar nodeKind = iota
	kindMap
	kindSeq
)

// maxNodes and maxDepth bound what one book may hold: a book is input.
const (
	maxNodes = 200_000
	maxDepth = 64
)

// parseYAML reads one YAML document into a node tree with positions.
func parseYAML(file string, data []byte) (*node, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var se yaml.Error
		if errors.As(err, &se) && se.GetToken() != nil {
			p := se.GetToken().Position
			return nil, errAt(Pos{file, p.Line, p.Column}, "%s", se.GetMessage())
		}
		return nil, errAt(Pos{File: file, Line: 1, Column: 1}, "%v", err)
	}
	if len(f.Docs) == 0 || f.Docs[0] == nil || f.Docs[0].Body == nil {
		return nil, errAt(Pos{File: file, Line: 1, Column: 1}, "the book is empty")
	}
	if len(f.Docs) > 1 {
		return nil, errAt(Pos{File: file, Line: 1, Column: 1}, "a book is one YAML document; this file has %d", len(f.Docs))
	}
	c := &converter{file: file}
	return c.conv(f.Docs[0].Body, 0)
}

type converter struct {
	file  string
	count int
}

func (c *converter) pos(n ast.Node) Pos {
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return Pos{File: c.file}
	}
	return Pos{File: c.file, Line: tk.Position.Line, Column: tk.Position.Column}
}

func (c *converter) conv(n ast.Node, depth int) (*node, error) {
	c.count++
	if c.count > maxNodes {
		return nil, errAt(c.pos(n), "the book holds more than %d values", maxNodes)
	}
	if depth > maxDepth {
		return nil, errAt(c.pos(n), "the book nests deeper than %d levels", maxDepth)
	}
	switch v := n.(type) {
	case *ast.DocumentNode:
		return c.conv(v.Body, depth)
	case *ast.CommentNode, *ast.CommentGroupNode:
		return &node{pos: c.pos(n), kind: kindScalar}, nil
	case *ast.TagNode:
		return c.conv(v.Value, depth)
	case *ast.AnchorNode:
		return c.conv(v.Value, depth)
	case *ast.AliasNode:
		return nil, errAt(c.pos(n), "aliases (*name) are not supported in a book; write the value out or use include")
	case *ast.MappingNode:
		out := &node{pos: c.pos(n), kind: kindMap, vals: map[string]*node{}, kpos: map[string]Pos{}}
		for _, mv := range v.Values {
			if err := c.pair(out, mv, depth); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *ast.MappingValueNode:
		out := &node{pos: c.pos(n), kind: kindMap, vals: map[string]*node{}, kpos: map[string]Pos{}}
		if err := c.pair(out, v, depth); err != nil {
			return nil, err
		}
		return out, nil
	case *ast.SequenceNode:
		out := &node{pos: c.pos(n), kind: kindSeq}
		for _, e := range v.Values {
			x, err := c.conv(e, depth+1)
			if err != nil {
				return nil, err
			}
			out.seq = append(out.seq, x)
		}
		return out, nil
	case *ast.NullNode:
		return &node{pos: c.pos(n), kind: kindScalar}, nil
	case *ast.StringNode:
		return &node{pos: c.pos(n), kind: kindScalar, val: v.Value}, nil
	case *ast.LiteralNode:
		return &node{pos: c.pos(n), kind: kindScalar, val: v.Value.Value}, nil
	case *ast.BoolNode:
		return &node{pos: c.pos(n), kind: kindScalar, val: v.Value}, nil
	case *ast.IntegerNode:
		var x any
		if err := yaml.NodeToValue(v, &x); err != nil {
			return nil, errAt(c.pos(n), "%v", err)
		}
		switch i := x.(type) {
		case int64:
			return &node{pos: c.pos(n), kind: kindScalar, val: float64(i)}, nil
		case uint64:
			return &node{pos: c.pos(n), kind: kindScalar, val: float64(i)}, nil
		case int:
			return &node{pos: c.pos(n), kind: kindScalar, val: float64(i)}, nil
		}
		return &node{pos: c.pos(n), kind: kindScalar, val: x}, nil
	case *ast.FloatNode:
		if math.IsInf(v.Value, 0) || math.IsNaN(v.Value) {
			return nil, errAt(c.pos(n), "%v is not a JSON number", v.Value)
		}
		return &node{pos: c.pos(n), kind: kindScalar, val: v.Value}, nil
	case *ast.InfinityNode, *ast.NanNode:
		return nil, errAt(c.pos(n), "%s is not a JSON number", n.String())
	}
	var x any
	if err := yaml.NodeToValue(n, &x); err != nil {
		return nil, errAt(c.pos(n), "%v", err)
	}
	return &node{pos: c.pos(n), kind: kindScalar, val: x}, nil
}

func (c *converter) pair(out *node, mv *ast.MappingValueNode, depth int) error {
	kp := c.pos(mv.Key)
	var key string
	switch k := mv.Key.(type) {
	case *ast.StringNode:
		key = k.Value
	default:
		var x any
		if err := yaml.NodeToValue(mv.Key, &x); err != nil {
			return errAt(kp, "a key that is not text: %v", err)
		}
		switch t := x.(type) {
		case string:
			key = t
		case nil:
			key = "null"
		default:
			key = fmt.Sprint(t)
		}
	}
	if _, dup := out.vals[key]; dup {
		return errAt(kp, "%s is given twice", strconv.Quote(key))
	}
	val, err := c.conv(mv.Value, depth+1)
	if err != nil {
		return err
	}
	out.keys = append(out.keys, key)
	out.vals[key] = val
	out.kpos[key] = kp
	return nil
}

// plain turns a node into the JSON value it writes (maps, slices, scalars).
func (n *node) plain() any {
	if n == nil {
		return nil
	}
	switch n.kind {
	case kindMap:
		m := make(map[string]any, len(n.keys))
		for _, k := range n.keys {
			m[k] = n.vals[k].plain()
		}
		return m
	case kindSeq:
		s := make([]any, len(n.seq))
		for i, e := range n.seq {
			s[i] = e.plain()
		}
		return s
	}
	return n.val
}

func (n *node) str() (string, bool) {
	if n == nil || n.kind != kindScalar {
		return "", false
	}
	s, ok := n.val.(string)
	return s, ok
}

func (n *node) what() string {
	if n == nil {
		return "nothing"
	}
	switch n.kind {
	case kindMap:
		return "a mapping"
	case kindSeq:
		return "a list"
	}
	switch n.val.(type) {
	case nil:
		return "null"
	case string:
		return "text"
	case bool:
		return "true/false"
	case float64:
		return "a number"
	}
	return fmt.Sprintf("%T", n.val)
}

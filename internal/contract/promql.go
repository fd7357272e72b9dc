package contract

import (
	"fmt"
	"strings"
)

// The PromQL words that look like identifiers but are not metric names.
var (
	promqlAggregators = map[string]bool{
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true,
		"stdvar": true, "count": true, "count_values": true, "bottomk": true, "topk": true,
		"quantile": true, "limitk": true, "limit_ratio": true,
	}
	promqlGrouping = map[string]bool{
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	}
	promqlKeywords = map[string]bool{
		"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true,
		"nan": true, "atan2": true, "start": true, "end": true,
	}
)

// MetricNamesInExpr returns the metric names a PromQL expression selects, in
// order of first use. It is a small lexer, not a parser: it skips strings,
// label matchers, range and subquery brackets, numbers, function and
// aggregation names and grouping label lists. Syntax is checked separately
// with promtool. Selectors written as {__name__="..."} are not reported.
func MetricNamesInExpr(expr string) []string {
	var names []string
	seen := map[string]bool{}
	i, n := 0, len(expr)
	skipSpace := func(j int) int {
		for j < n && (expr[j] == ' ' || expr[j] == '\t' || expr[j] == '\n' || expr[j] == '\r') {
			j++
		}
		return j
	}
	skipString := func(j int) int { // expr[j] is the opening quote
		quote := expr[j]
		for j++; j < n && expr[j] != quote; j++ {
			if expr[j] == '\\' && quote != '`' {
				j++
			}
		}
		return j + 1
	}
	skipUntil := func(j int, closer byte) int { // expr[j] is the opener
		for j++; j < n && expr[j] != closer; {
			if expr[j] == '"' || expr[j] == '\'' || expr[j] == '`' {
				j = skipString(j)
				continue
			}
			j++
		}
		return j + 1
	}
	for i < n {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(i)
		case c == '{':
			i = skipUntil(i, '}')
		case c == '[':
			i = skipUntil(i, ']')
		case c == '#':
			for i < n && expr[i] != '\n' {
				i++
			}
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(expr[i+1])):
			for i < n && (isIdentChar(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < n && isIdentChar(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := skipSpace(i)
			switch {
			case promqlGrouping[word]:
				if next < n && expr[next] == '(' {
					i = skipUntil(next, ')')
				}
			case promqlKeywords[word], promqlAggregators[word]:
			case next < n && expr[next] == '(':
				// a function call
			default:
				if !seen[word] {
					seen[word] = true
					names = append(names, word)
				}
			}
		default:
			i++
		}
	}
	return names
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// MayBeNonEmpty reports whether a PromQL expression can return anything
// when the only series that exist are those of the metric names served
// says yes to: a selector of an unserved name is empty, and emptiness
// propagates as PromQL does (a and b, a OP b, f(a) and agg(a) are empty
// when a is; a or b only when both are; a unless b when a is; absent(a),
// vector(s), time() and numbers never are). A selector without a metric
// name counts as served. It parses the expression with a small
// precedence-climbing parser of the PromQL the rules and dashboards use;
// the error says where it gave up.
func MayBeNonEmpty(expr string, served func(name string) bool) (bool, error) {
	p := &exprParser{toks: lexPromQL(expr)}
	n, err := p.parseExpr(0)
	if err != nil {
		return false, err
	}
	if !p.at(tokEOF, "") {
		return false, p.errorf("unexpected %q", p.peek().text)
	}
	return n.nonEmpty(served), nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokString
	tokPunct // ( ) { } [ ] , and operators
)

type token struct {
	kind tokKind
	text string
	pos  int
}

// lexPromQL splits an expression into tokens. Brackets [ ... ] (ranges,
// subqueries) and braces { ... } (matchers) are single tokens: nothing
// inside them matters here.
func lexPromQL(expr string) []token {
	var toks []token
	i, n := 0, len(expr)
	skipString := func(j int) int {
		quote := expr[j]
		for j++; j < n && expr[j] != quote; j++ {
			if expr[j] == '\\' && quote != '`' {
				j++
			}
		}
		return j + 1
	}
	block := func(j int, closer byte) int {
		for j++; j < n && expr[j] != closer; {
			if expr[j] == '"' || expr[j] == '\'' || expr[j] == '`' {
				j = skipString(j)
				continue
			}
			j++
		}
		return min(j+1, n)
	}
	for i < n {
		c := expr[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '#':
			for i < n && expr[i] != '\n' {
				i++
			}
			continue
		case c == '"' || c == '\'' || c == '`':
			i = min(skipString(i), n)
			toks = append(toks, token{tokString, expr[start:i], start})
		case c == '{':
			i = block(i, '}')
			toks = append(toks, token{tokPunct, expr[start:i], start})
		case c == '[':
			i = block(i, ']')
			toks = append(toks, token{tokPunct, expr[start:i], start})
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(expr[i+1])):
			for i < n && (isIdentChar(expr[i]) || expr[i] == '.' ||
				((expr[i] == '+' || expr[i] == '-') && (expr[i-1] == 'e' || expr[i-1] == 'E') && !strings.ContainsAny(expr[start:i], "xX"))) {
				i++
			}
			toks = append(toks, token{tokNumber, expr[start:i], start})
		case isIdentStart(c):
			for i < n && isIdentChar(expr[i]) {
				i++
			}
			toks = append(toks, token{tokIdent, expr[start:i], start})
		default:
			if i+1 < n {
				switch two := expr[i : i+2]; two {
				case "==", "!=", "<=", ">=", "=~", "!~":
					i += 2
					toks = append(toks, token{tokPunct, two, start})
					continue
				}
			}
			i++
			toks = append(toks, token{tokPunct, expr[start:i], start})
		}
	}
	return append(toks, token{tokEOF, "", n})
}

// binaryPrecedence of PromQL's binary operators; 0 is not one.
func binaryPrecedence(t token) int {
	switch strings.ToLower(t.text) {
	case "or":
		return 1
	case "and", "unless":
		return 2
	case "==", "!=", "<=", "<", ">=", ">":
		if t.kind == tokPunct {
			return 3
		}
	case "+", "-":
		if t.kind == tokPunct {
			return 4
		}
	case "*", "/", "%", "atan2":
		return 5
	case "^":
		if t.kind == tokPunct {
			return 6
		}
	}
	return 0
}

type exprNode interface {
	nonEmpty(served func(string) bool) bool
}

type (
	scalarNode   struct{}
	selectorNode struct{ name string }
	binaryNode   struct {
		op          string
		left, right exprNode
	}
	callNode struct {
		name string
		args []exprNode
	}
)

func (scalarNode) nonEmpty(func(string) bool) bool { return true }

func (s selectorNode) nonEmpty(served func(string) bool) bool {
	return s.name == "" || served(s.name)
}

func (b binaryNode) nonEmpty(served func(string) bool) bool {
	switch b.op {
	case "or":
		return b.left.nonEmpty(served) || b.right.nonEmpty(served)
	case "unless":
		return b.left.nonEmpty(served)
	}
	return b.left.nonEmpty(served) && b.right.nonEmpty(served)
}

func (c callNode) nonEmpty(served func(string) bool) bool {
	switch c.name {
	case "absent", "absent_over_time", "vector", "time", "scalar", "pi":
		return true
	}
	for _, a := range c.args {
		if !a.nonEmpty(served) {
			return false
		}
	}
	return true
}

type exprParser struct {
	toks []token
	i    int
}

func (p *exprParser) peek() token { return p.toks[p.i] }
func (p *exprParser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}
func (p *exprParser) at(kind tokKind, text string) bool {
	t := p.peek()
	return t.kind == kind && (text == "" || strings.EqualFold(t.text, text))
}
func (p *exprParser) errorf(format string, args ...any) error {
	return fmt.Errorf("PromQL at offset %d: %s", p.peek().pos, fmt.Sprintf(format, args...))
}
func (p *exprParser) expect(text string) error {
	if !p.at(tokPunct, text) {
		return p.errorf("want %q, got %q", text, p.peek().text)
	}
	p.next()
	return nil
}

// labelList skips a parenthesised list of label names.
func (p *exprParser) labelList() error {
	if err := p.expect("("); err != nil {
		return err
	}
	for !p.at(tokPunct, ")") {
		if p.at(tokEOF, "") {
			return p.errorf("unterminated label list")
		}
		p.next()
	}
	p.next()
	return nil
}

func (p *exprParser) parseExpr(minPrec int) (exprNode, error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		prec := binaryPrecedence(p.peek())
		if prec == 0 || prec < minPrec {
			return left, nil
		}
		op := strings.ToLower(p.next().text)
		for {
			switch {
			case p.at(tokIdent, "bool"):
				p.next()
				continue
			case p.at(tokIdent, "on"), p.at(tokIdent, "ignoring"):
				p.next()
				if err := p.labelList(); err != nil {
					return nil, err
				}
				continue
			case p.at(tokIdent, "group_left"), p.at(tokIdent, "group_right"):
				p.next()
				if p.at(tokPunct, "(") {
					if err := p.labelList(); err != nil {
						return nil, err
					}
				}
				continue
			}
			break
		}
		nextMin := prec + 1
		if op == "^" { // right-associative
			nextMin = prec
		}
		right, err := p.parseExpr(nextMin)
		if err != nil {
			return nil, err
		}
		left = binaryNode{op: op, left: left, right: right}
	}
}

func (p *exprParser) parseUnary() (exprNode, error) {
	if p.at(tokPunct, "-") || p.at(tokPunct, "+") {
		p.next()
		// A unary operator binds tighter than any binary one but ^.
		return p.parseExpr(6)
	}
	n, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	// Postfix: ranges and subqueries, offset, @.
	for {
		switch {
		case p.peek().kind == tokPunct && strings.HasPrefix(p.peek().text, "["):
			p.next()
		case p.at(tokIdent, "offset"):
			p.next()
			if p.at(tokPunct, "-") {
				p.next()
			}
			if p.peek().kind != tokNumber {
				return nil, p.errorf("want a duration after offset")
			}
			p.next()
		case p.at(tokPunct, "@"):
			p.next()
			if p.peek().kind == tokNumber {
				p.next()
			} else if _, err := p.parsePrimary(); err != nil {
				return nil, err
			}
		default:
			return n, nil
		}
	}
}

func (p *exprParser) parsePrimary() (exprNode, error) {
	t := p.peek()
	switch {
	case t.kind == tokNumber || t.kind == tokString:
		p.next()
		return scalarNode{}, nil
	case t.kind == tokPunct && t.text == "(":
		p.next()
		n, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		return n, p.expect(")")
	case t.kind == tokPunct && strings.HasPrefix(t.text, "{"):
		p.next()
		return selectorNode{}, nil
	case t.kind != tokIdent:
		return nil, p.errorf("unexpected %q", t.text)
	}
	p.next()
	word := t.text
	lower := strings.ToLower(word)
	switch lower {
	case "inf", "nan":
		return scalarNode{}, nil
	}
	if promqlAggregators[lower] {
		grouped := false
		if p.at(tokIdent, "by") || p.at(tokIdent, "without") {
			p.next()
			if err := p.labelList(); err != nil {
				return nil, err
			}
			grouped = true
		}
		if p.at(tokPunct, "(") {
			args, err := p.args()
			if err != nil {
				return nil, err
			}
			if !grouped && (p.at(tokIdent, "by") || p.at(tokIdent, "without")) {
				p.next()
				if err := p.labelList(); err != nil {
					return nil, err
				}
			}
			return callNode{name: lower, args: args}, nil
		}
		if grouped {
			return nil, p.errorf("want the arguments of %s", word)
		}
	}
	if p.at(tokPunct, "(") {
		args, err := p.args()
		if err != nil {
			return nil, err
		}
		return callNode{name: word, args: args}, nil
	}
	if p.peek().kind == tokPunct && strings.HasPrefix(p.peek().text, "{") {
		p.next()
	}
	return selectorNode{name: word}, nil
}

// args parses a parenthesised, comma-separated argument list.
func (p *exprParser) args() ([]exprNode, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var args []exprNode
	for !p.at(tokPunct, ")") {
		a, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if p.at(tokPunct, ",") {
			p.next()
		} else if !p.at(tokPunct, ")") {
			return nil, p.errorf("want , or ) in an argument list, got %q", p.peek().text)
		}
	}
	p.next()
	return args, nil
}

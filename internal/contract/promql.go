package contract

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

package marts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A model is a user's gold table: one SQL file in the models directory
// (Config.Models), a SELECT over the lake's tables and other models by
// name, with a header of "-- @" comment lines saying what the SELECT's
// rows are:
//
//	-- @model gold.edits_per_namespace_hourly   (default: gold.<file name>)
//	-- @unit hour(hour)                          (or day(col), or table: the default)
//	-- @key wiki, namespace, hour                (checked unique and not null)
//	-- @check not_null(wiki)
//	-- @check accepted_values(kind, 'edit', 'new')
//	-- @check row_count_between(1, 100000)
//	-- @check reconciles(sum(edits), silver.edits, count(*))
//	SELECT ...
//
// A refresh builds the models after the built-in marts, in the order of
// what each reads, each only in the units whose inputs changed since it
// was written (model_build.go); models.md in docs/ is the user's page.

// ErrBadModel: a model file breaks a rule (ModelError says the file, the
// line and the rule); the model is not built, the others are.
var ErrBadModel = errors.New("bad model")

// ModelError is why a model is refused: the file, the line (0 when not
// known), the rule it breaks and what was found.
type ModelError struct {
	File string
	Line int
	Rule string
	Msg  string
}

func (e *ModelError) Error() string {
	where := e.File
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	return fmt.Sprintf("%s: %s: %s", where, e.Rule, e.Msg)
}

func (e *ModelError) Unwrap() error { return ErrBadModel }

// The rules a model is refused by (ModelError.Rule).
const (
	RuleHeader  = "header"       // a header line that does not parse
	RuleName    = "name"         // a table name a model may not have
	RuleSyntax  = "syntax"       // the SQL does not parse
	RuleSelect  = "one SELECT"   // anything but one SELECT statement
	RuleInput   = "input"        // reads a table that is not a model input
	RuleColumns = "columns"      // DuckDB cannot bind the SELECT (a column, a function)
	RuleType    = "column type"  // an output column of a type gold does not hold
	RuleUnit    = "unit"         // the unit's column is missing or of the wrong type
	RuleCheck   = "check"        // a check over a missing column, or malformed
	RuleCycle   = "cycle"        // models that read each other
	RuleRows    = "rows in unit" // rows built outside the units their inputs cover
)

// Unit kinds of a model.
const (
	UnitTable = "table"
	UnitDay   = "day"
	UnitHour  = "hour"
)

// ModelUnit is what a model is rebuilt by: a UTC day or hour of Col, or
// the whole table.
type ModelUnit struct {
	Kind string
	Col  string
}

func (u ModelUnit) String() string {
	if u.Kind == UnitTable {
		return UnitTable
	}
	return u.Kind + "(" + u.Col + ")"
}

// length is the unit's length (0 for a whole table).
func (u ModelUnit) length() time.Duration {
	switch u.Kind {
	case UnitDay:
		return unitDay
	case UnitHour:
		return unitHour
	}
	return 0
}

// Check kinds of a model.
const (
	CheckUnique          = "unique"
	CheckNotNull         = "not_null"
	CheckAcceptedValues  = "accepted_values"
	CheckRowCountBetween = "row_count_between"
	CheckReconciles      = "reconciles"
)

// ModelCheck is one "@check kind(args)" line.
type ModelCheck struct {
	Kind string
	Args []string
	Line int
}

func (c ModelCheck) String() string { return c.Kind + "(" + strings.Join(c.Args, ", ") + ")" }

// Model is one parsed model file.
type Model struct {
	File  string // the path it was read from
	Ident string // "namespace.name"
	Unit  ModelUnit
	Key   []string
	// Checks are the @check lines, then unique and not_null of the key.
	Checks []ModelCheck
	// SQL is the whole file: the header is comments, so DuckDB's line
	// numbers are the file's.
	SQL string
	// lines of the header directives, for errors.
	unitLine, keyLine, nameLine int
}

// applianceNamespaces are the namespaces the appliance writes: a model
// never writes there.
var applianceNamespaces = []string{"bronze", "silver", "ops"}

var (
	directive = regexp.MustCompile(`^--\s*@([A-Za-z_]+)\s*(.*?)\s*$`)
	identRe   = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	callRe    = regexp.MustCompile(`^([a-z_]+)\s*\((.*)\)$`)
)

// LoadModels reads every *.sql file of dir (sorted by name) as a model.
// Each file that breaks a header rule is returned in errs (a *ModelError),
// the others in models; two models of one name refuse the second.
func LoadModels(dir string) (models []Model, errs []error, err error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, nil, fmt.Errorf("models in %s: %w", dir, err)
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("models directory: %w", err)
	}
	slices.Sort(paths)
	seen := map[string]string{}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("read model: %w", err)
		}
		m, err := ParseModel(p, string(src))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if other, ok := seen[m.Ident]; ok {
			errs = append(errs, &ModelError{File: p, Line: m.nameLine, Rule: RuleName,
				Msg: fmt.Sprintf("%s is also the model of %s", m.Ident, other)})
			continue
		}
		seen[m.Ident] = p
		models = append(models, m)
	}
	return models, errs, nil
}

// ParseModel parses a model's header (the SQL is compiled later, against
// the lake: compileModels). file names it in errors.
func ParseModel(file, src string) (Model, error) {
	m, err := parseHeader(file, src)
	if err != nil {
		return Model{}, err
	}
	if err := checkModelName(m.Ident); err != "" {
		return Model{}, &ModelError{File: file, Line: m.nameLine, Rule: RuleName, Msg: err}
	}
	return m, nil
}

// parseHeader parses a model's header lines, the built-in marts' too.
func parseHeader(file, src string) (Model, error) {
	m := Model{File: file, SQL: src, Unit: ModelUnit{Kind: UnitTable}}
	bad := func(line int, rule, format string, a ...any) (Model, error) {
		return Model{}, &ModelError{File: file, Line: line, Rule: rule, Msg: fmt.Sprintf(format, a...)}
	}
	base := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	m.Ident = "gold." + base
	var keyChecks []ModelCheck
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		t := strings.TrimSpace(line)
		if t == "" || !strings.HasPrefix(t, "--") {
			if t != "" {
				break // the header ends at the first line of SQL
			}
			continue
		}
		d := directive.FindStringSubmatch(t)
		if d == nil {
			continue // a comment
		}
		kind, arg := strings.ToLower(d[1]), d[2]
		switch kind {
		case "model":
			if m.nameLine != 0 {
				return bad(n, RuleHeader, "a second @model line")
			}
			m.Ident, m.nameLine = strings.ToLower(arg), n
		case "unit":
			if m.unitLine != 0 {
				return bad(n, RuleHeader, "a second @unit line")
			}
			m.unitLine = n
			if strings.EqualFold(arg, UnitTable) {
				break
			}
			c := callRe.FindStringSubmatch(strings.ToLower(arg))
			if c == nil || c[1] != UnitDay && c[1] != UnitHour || !identRe.MatchString(strings.TrimSpace(c[2])) {
				return bad(n, RuleHeader, "@unit %q: want day(column), hour(column) or table", arg)
			}
			m.Unit = ModelUnit{Kind: c[1], Col: strings.TrimSpace(c[2])}
		case "key":
			if m.keyLine != 0 {
				return bad(n, RuleHeader, "a second @key line")
			}
			m.keyLine = n
			for _, k := range strings.Split(arg, ",") {
				k = strings.TrimSpace(k)
				if !identRe.MatchString(k) {
					return bad(n, RuleHeader, "@key %q: want column names separated by commas", arg)
				}
				m.Key = append(m.Key, k)
			}
			keyChecks = []ModelCheck{{Kind: CheckUnique, Args: m.Key, Line: n}, {Kind: CheckNotNull, Args: m.Key, Line: n}}
		case "check":
			c, err := parseCheck(arg)
			if err != nil {
				return bad(n, RuleHeader, "@check %q: %v", arg, err)
			}
			c.Line = n
			m.Checks = append(m.Checks, c)
		default:
			return bad(n, RuleHeader, "unknown directive @%s (want @model, @unit, @key or @check)", d[1])
		}
	}
	m.Checks = append(m.Checks, keyChecks...)
	return m, nil
}

// checkModelName says why ident cannot be a model's table ("" when it can).
func checkModelName(ident string) string {
	ns, name, ok := strings.Cut(ident, ".")
	switch {
	case !ok || !identRe.MatchString(ns) || !identRe.MatchString(name):
		return fmt.Sprintf("%q: want namespace.name in lower case letters, digits and _", ident)
	case slices.Contains(applianceNamespaces, ns):
		return fmt.Sprintf("%s: the appliance writes namespace %s; a model writes gold or a namespace of its own", ident, ns)
	case slices.Contains(GoldTables, ident):
		return fmt.Sprintf("%s is a built-in mart", ident)
	}
	return ""
}

// parseCheck parses "kind(arg, arg, ...)": arguments split at top-level
// commas (not inside parentheses or quotes).
func parseCheck(s string) (ModelCheck, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 || !strings.HasSuffix(s, ")") {
		return ModelCheck{}, errors.New("want kind(arguments)")
	}
	c := ModelCheck{Kind: strings.ToLower(strings.TrimSpace(s[:open]))}
	args, err := splitArgs(s[open+1 : len(s)-1])
	if err != nil {
		return ModelCheck{}, err
	}
	c.Args = args
	want := map[string][2]int{CheckUnique: {1, -1}, CheckNotNull: {1, -1}, CheckAcceptedValues: {2, -1},
		CheckRowCountBetween: {2, 2}, CheckReconciles: {3, 3}}
	n, ok := want[c.Kind]
	switch {
	case !ok:
		return ModelCheck{}, fmt.Errorf("unknown check %q (want unique, not_null, accepted_values, row_count_between or reconciles)", c.Kind)
	case len(args) < n[0] || n[1] >= 0 && len(args) > n[1]:
		return ModelCheck{}, fmt.Errorf("%s takes %s", c.Kind, map[string]string{
			CheckUnique: "one or more columns", CheckNotNull: "one or more columns",
			CheckAcceptedValues:  "a column and one or more values",
			CheckRowCountBetween: "a minimum and a maximum number of rows",
			CheckReconciles:      "an aggregate of this model, a table, and an aggregate of that table"}[c.Kind])
	}
	switch c.Kind {
	case CheckUnique, CheckNotNull:
		for _, a := range args {
			if !identRe.MatchString(a) {
				return ModelCheck{}, fmt.Errorf("%q is not a column name", a)
			}
		}
	case CheckAcceptedValues:
		if !identRe.MatchString(args[0]) {
			return ModelCheck{}, fmt.Errorf("%q is not a column name", args[0])
		}
	case CheckRowCountBetween:
		lo, err1 := strconv.ParseInt(args[0], 10, 64)
		hi, err2 := strconv.ParseInt(args[1], 10, 64)
		if err1 != nil || err2 != nil || lo < 0 || hi < lo {
			return ModelCheck{}, errors.New("row_count_between takes two whole numbers, the minimum first")
		}
	case CheckReconciles:
		if !identRe.MatchString(strings.ReplaceAll(args[1], ".", "_")) || !strings.Contains(args[1], ".") {
			return ModelCheck{}, fmt.Errorf("%q is not a table (namespace.name)", args[1])
		}
	}
	return c, nil
}

// splitArgs splits s at commas outside parentheses and quotes, trimming
// each part; an empty part is an error.
func splitArgs(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth < 0 {
				return nil, errors.New("unbalanced parentheses")
			}
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if quote != 0 || depth != 0 {
		return nil, errors.New("unbalanced quotes or parentheses")
	}
	out = append(out, strings.TrimSpace(s[start:]))
	for _, a := range out {
		if a == "" {
			return nil, errors.New("an empty argument")
		}
	}
	return out, nil
}

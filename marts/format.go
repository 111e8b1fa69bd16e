package marts

import (
	"bytes"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// result is a fully read query result.
type result struct {
	cols  []string
	types []string // DuckDB type names
	rows  [][]any
}

func readResult(rows *sql.Rows) (*result, error) {
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	r := &result{}
	for _, ct := range cts {
		r.cols = append(r.cols, ct.Name())
		r.types = append(r.types, ct.DatabaseTypeName())
	}
	for rows.Next() {
		vals := make([]any, len(cts))
		ptrs := make([]any, len(cts))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r.rows = append(r.rows, vals)
	}
	return r, rows.Err()
}

func (r *result) write(w io.Writer, format string) error {
	var err error
	switch format {
	case FormatCSV:
		err = r.writeCSV(w)
	case FormatJSON:
		err = r.writeJSON(w)
	default:
		err = r.writeTable(w)
	}
	if err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// text renders one value for the table and CSV formats; ok is false for NULL.
func text(v any, typ string) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	case []byte:
		if utf8.Valid(v) {
			return string(v), true
		}
		return fmt.Sprintf("%x", v), true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32), true
	case time.Time:
		switch typ {
		case "DATE":
			return v.UTC().Format(time.DateOnly), true
		case "TIMESTAMP":
			return v.UTC().Format("2006-01-02 15:04:05.999999"), true
		case "TIME":
			return v.UTC().Format("15:04:05.999999"), true
		}
		return v.UTC().Format("2006-01-02 15:04:05.999999Z07:00"), true
	case *big.Int:
		return v.String(), true
	case fmt.Stringer:
		return v.String(), true
	case map[string]any, []any, map[any]any:
		b, err := json.Marshal(jsonable(v, ""))
		if err != nil {
			return fmt.Sprint(v), true
		}
		return string(b), true
	}
	return fmt.Sprint(v), true
}

func numeric(typ string) bool {
	switch {
	case strings.HasPrefix(typ, "DECIMAL"):
		return true
	}
	switch typ {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
		"UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE":
		return true
	}
	return false
}

func (r *result) writeTable(w io.Writer) error {
	cells := make([][]string, len(r.rows))
	width := make([]int, len(r.cols))
	for i, c := range r.cols {
		width[i] = utf8.RuneCountInString(c)
	}
	for ri, row := range r.rows {
		cells[ri] = make([]string, len(row))
		for i, v := range row {
			s, ok := text(v, r.types[i])
			if !ok {
				s = "NULL"
			}
			s = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
			cells[ri][i] = s
			width[i] = max(width[i], utf8.RuneCountInString(s))
		}
	}
	var b bytes.Buffer
	line := func(vals []string, rightAlign bool) {
		for i, s := range vals {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(s))
			if rightAlign && numeric(r.types[i]) {
				b.WriteString(pad + s)
			} else if i == len(vals)-1 {
				b.WriteString(s)
			} else {
				b.WriteString(s + pad)
			}
		}
		b.WriteByte('\n')
	}
	line(r.cols, false)
	sep := make([]string, len(r.cols))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep, false)
	for _, row := range cells {
		line(row, true)
	}
	fmt.Fprintf(&b, "(%d row", len(r.rows))
	if len(r.rows) != 1 {
		b.WriteByte('s')
	}
	b.WriteString(")\n")
	_, err := w.Write(b.Bytes())
	return err
}

func (r *result) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(r.cols); err != nil {
		return err
	}
	rec := make([]string, len(r.cols))
	for _, row := range r.rows {
		for i, v := range row {
			rec[i], _ = text(v, r.types[i])
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// jsonable converts a scanned value to something encoding/json writes as
// the natural JSON value.
func jsonable(v any, typ string) any {
	switch v := v.(type) {
	case nil, bool, string, int8, int16, int32, int64, uint8, uint16, uint32, uint64, int:
		return v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return v
	case float32:
		return jsonable(float64(v), typ)
	case *big.Int:
		return json.Number(v.String())
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = jsonable(x, "")
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = jsonable(x, "")
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[fmt.Sprint(k)] = jsonable(x, "")
		}
		return out
	}
	s, _ := text(v, typ)
	return s
}

func (r *result) writeJSON(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString("[")
	for ri, row := range r.rows {
		if ri > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  {")
		for i, v := range row {
			if i > 0 {
				b.WriteString(", ")
			}
			k, _ := json.Marshal(r.cols[i])
			val, err := json.Marshal(jsonable(v, r.types[i]))
			if err != nil {
				return fmt.Errorf("column %s: %w", r.cols[i], err)
			}
			b.Write(k)
			b.WriteString(": ")
			b.Write(val)
		}
		b.WriteString("}")
	}
	if len(r.rows) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

// Command schema-gen prints the protobuf schema of the built-in kinds of one Kubernetes version:
// every message reachable from the registered kinds, each field's protobuf number, type,
// cardinality and message type (from the packages' generated.proto, what is on the wire), and
// from the Go types by reflection its JSON name, whether it is an embedded struct that Go's JSON
// merges into its parent, and whether a zero on the wire means "absent". That is what
// informer-proto's schema table needs to read protobuf the way Go's JSON reads the same object
// (docs/decisions/15-protobuf-through-one-schema-driven-deserializer.md).
//
// This directory holds the program and one Go module per Kubernetes version (k8s-1.MM/go.mod and
// go.sum, which pin that version's k8s.io/api). `cargo codegen` (xtask/src/proto_schema/) builds
// it once per version in the target directory, beside a groups.go it writes that registers every
// group and version of that k8s.io/api and names the modules' directories, runs it, and merges
// the outputs into schema.tsv, from which it writes informer-proto's table.
//
// Output (stdout), tab-separated, kinds sorted, then messages sorted, each followed by its fields
// in number order:
//
//	K <group> <version> <kind> <message>
//	M <message>
//	F <message> <number> <json> <type> <label> <message type or -> <omit zero>
//
// <message> is the proto message's full name without "k8s.io." (api.core.v1.Pod). <type> is
// string, bytes, int32, int64, bool, double or message; <label> is Single, Repeated, Map
// (map<string, type>) or Inline (an embedded struct whose fields Go's JSON merges into the
// parent); <omit zero> is true when a zero on the wire means the field is absent.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protoField is one field of a message in generated.proto.
type protoField struct {
	name  string
	ty    string // a scalar type or a message's full name
	label string // Single, Repeated or Map
}

// field is one row of the output.
type field struct {
	tag      int
	json     string
	ty       string
	label    string
	msg      string
	omitZero bool
}

type walker struct {
	// Proto messages by full name, from the generated.proto files read so far.
	protos map[string]map[int]protoField
	// Packages whose generated.proto was read.
	read   map[string]bool
	fields map[string][]field
	errors []string
}

// extraRoots are messages that no registered kind reaches and the table keeps: the envelope of
// every protobuf body, the list kubectl's multi-kind answers use, and Duration, whose JSON shape
// the table supports.
var extraRoots = []any{runtime.Unknown{}, metav1.List{}, metav1.Duration{}}

func main() {
	scheme := runtime.NewScheme()
	for _, add := range addToScheme {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	w := &walker{protos: map[string]map[int]protoField{}, read: map[string]bool{}, fields: map[string][]field{}}
	var kinds []string
	for gvk, t := range scheme.AllKnownTypes() {
		// Kinds with no protobuf form (meta.k8s.io's Table) are served as JSON only.
		if gvk.Version == runtime.APIVersionInternal || !w.hasMessage(t) {
			continue
		}
		msg := w.message(t)
		if isResource(t) {
			kinds = append(kinds, strings.Join([]string{"K", gvk.Group, gvk.Version, gvk.Kind, msg}, "\t"))
		}
	}
	for _, root := range extraRoots {
		w.message(reflect.TypeOf(root))
	}
	if len(w.errors) > 0 {
		sort.Strings(w.errors)
		fmt.Fprintln(os.Stderr, strings.Join(w.errors, "\n"))
		os.Exit(1)
	}
	sort.Strings(kinds)
	lines := kinds
	names := make([]string, 0, len(w.fields))
	for name := range w.fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		lines = append(lines, "M\t"+name)
		for _, f := range w.fields[name] {
			msg := f.msg
			if msg == "" {
				msg = "-"
			}
			lines = append(lines, strings.Join([]string{
				"F", name, strconv.Itoa(f.tag), f.json, f.ty, f.label, msg, strconv.FormatBool(f.omitZero),
			}, "\t"))
		}
	}
	fmt.Println(strings.Join(lines, "\n"))
}

// isResource tells a kind of its own (a struct with ObjectMeta as `metadata`) from the option
// and list types every group registers.
func isResource(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	f, ok := t.FieldByName("ObjectMeta")
	return ok && strings.HasPrefix(f.Tag.Get("json"), "metadata")
}

// packageName is the proto package of a Go package without "k8s.io." (api.core.v1).
func packageName(pkgPath string) string {
	pkg := strings.TrimPrefix(pkgPath, "k8s.io/")
	return strings.ReplaceAll(strings.ReplaceAll(pkg, "-", "_"), "/", ".")
}

// readProto reads the generated.proto of Go package pkgPath into w.protos.
func (w *walker) readProto(pkgPath string) {
	if w.read[pkgPath] {
		return
	}
	w.read[pkgPath] = true
	dir := ""
	for module, d := range moduleDirs {
		if (pkgPath == module || strings.HasPrefix(pkgPath, module+"/")) && len(d) > len(dir) {
			dir = filepath.Join(d, strings.TrimPrefix(pkgPath, module))
		}
	}
	path := filepath.Join(dir, "generated.proto")
	file, err := os.Open(path)
	if err != nil {
		w.errors = append(w.errors, fmt.Sprintf("%s: %v", pkgPath, err))
		return
	}
	defer file.Close()
	pkg := packageName(pkgPath)
	var current map[int]protoField
	scanner := bufio.NewScanner(file)
	line := 0
	fail := func(format string, args ...any) {
		w.errors = append(w.errors, fmt.Sprintf("%s:%d: ", path, line)+fmt.Sprintf(format, args...))
	}
	// A message's type: scalars as they are, `.k8s.io.x.Y` as x.Y, `Y` as <package>.Y.
	typeName := func(t string) string {
		switch t {
		case "string", "bytes", "int32", "int64", "bool", "double":
			return t
		}
		if full, ok := strings.CutPrefix(t, ".k8s.io."); ok {
			return full
		}
		if strings.Contains(t, ".") {
			fail("type %q", t)
		}
		return pkg + "." + t
	}
	for scanner.Scan() {
		line++
		text := strings.TrimSpace(scanner.Text())
		if i := strings.Index(text, "//"); i >= 0 {
			text = strings.TrimSpace(text[:i])
		}
		switch {
		case strings.HasPrefix(text, "message "):
			name := strings.TrimSuffix(strings.TrimPrefix(text, "message "), " {")
			current = map[int]protoField{}
			w.protos[pkg+"."+name] = current
		case text == "}":
			current = nil
		case current != nil && text != "":
			// `optional T name = N;`, `repeated T name = N;` or `map<string, T> name = N;`.
			decl, num, ok := strings.Cut(strings.TrimSuffix(text, ";"), " = ")
			n, err := strconv.Atoi(num)
			if !ok || err != nil {
				fail("%q", text)
				continue
			}
			var f protoField
			if rest, isMap := strings.CutPrefix(decl, "map<string, "); isMap {
				value, name, ok := strings.Cut(rest, "> ")
				if !ok {
					fail("%q", text)
				}
				f = protoField{name: name, ty: typeName(value), label: "Map"}
			} else {
				parts := strings.Fields(decl)
				if len(parts) != 3 || (parts[0] != "optional" && parts[0] != "repeated") {
					fail("%q", text)
					continue
				}
				label := "Single"
				if parts[0] == "repeated" {
					label = "Repeated"
				}
				f = protoField{name: parts[2], ty: typeName(parts[1]), label: label}
			}
			current[n] = f
		}
	}
	if err := scanner.Err(); err != nil {
		fail("%v", err)
	}
}

// hasMessage: whether Go type t has a message in its package's generated.proto.
func (w *walker) hasMessage(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !strings.HasPrefix(t.PkgPath(), "k8s.io/") || t.Name() == "" {
		return false
	}
	w.readProto(t.PkgPath())
	_, ok := w.protos[packageName(t.PkgPath())+"."+t.Name()]
	return ok
}

// message records the message of Go type t and everything it reaches; it returns the message's
// name, or "" when t is no named type of a Kubernetes package.
func (w *walker) message(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !strings.HasPrefix(t.PkgPath(), "k8s.io/") || t.Name() == "" {
		return ""
	}
	name := packageName(t.PkgPath()) + "." + t.Name()
	if _, done := w.fields[name]; done {
		return name
	}
	w.readProto(t.PkgPath())
	proto, ok := w.protos[name]
	if !ok {
		w.errors = append(w.errors, fmt.Sprintf("%s: no message in generated.proto", name))
		return name
	}
	fields := []field{}
	w.fields[name] = fields
	// The Go fields by protobuf number.
	goFields := map[int]reflect.StructField{}
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			pb, ok := f.Tag.Lookup("protobuf")
			if !ok || pb == "-" {
				continue
			}
			parts := strings.Split(pb, ",")
			n, err := 0, fmt.Errorf("no number")
			if len(parts) > 1 {
				n, err = strconv.Atoi(parts[1])
			}
			if err != nil {
				w.errors = append(w.errors, fmt.Sprintf("%s.%s: protobuf tag %q: %v", name, f.Name, pb, err))
				continue
			}
			if _, known := proto[n]; !known {
				w.errors = append(w.errors, fmt.Sprintf("%s.%s: number %d is not in generated.proto", name, f.Name, n))
			}
			goFields[n] = f
		}
	}
	// Types that marshal themselves (Quantity, Time, a named list such as Verbs) have no tagged
	// fields: their proto names stand for the JSON names, which their JSON shape does not use.
	custom := len(goFields) == 0
	for n, p := range proto {
		out := field{tag: n, json: p.name, ty: p.ty, label: p.label}
		if !isScalar(p.ty) {
			out.ty, out.msg = "message", p.ty
		}
		f, ok := goFields[n]
		switch {
		case ok:
			w.goFacts(name, p, f, &out)
		case !custom:
			w.errors = append(w.errors, fmt.Sprintf("%s: field %d (%s) has no Go field", name, n, p.name))
		case out.msg != "":
			w.errors = append(w.errors, fmt.Sprintf("%s: field %d (%s) of a type that marshals itself is a message", name, n, p.name))
		}
		fields = append(fields, out)
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].tag < fields[j].tag })
	w.fields[name] = fields
	return name
}

func isScalar(ty string) bool {
	switch ty {
	case "string", "bytes", "int32", "int64", "bool", "double":
		return true
	}
	return false
}

// goFacts fills in what the Go field f says about proto field p: the JSON name, the embedding,
// whether a zero means absent; and walks into its message.
func (w *walker) goFacts(msg string, p protoField, f reflect.StructField, out *field) {
	jsonName, rest, _ := strings.Cut(f.Tag.Get("json"), ",")
	opts := map[string]bool{}
	for _, o := range strings.Split(rest, ",") {
		opts[o] = true
	}
	if jsonName != "" && jsonName != "-" {
		out.json = jsonName
	}
	// encoding/json flattens an embedded struct without a JSON name (Kubernetes writes
	// `json:",inline"` or `json:""` on them). (Duration embeds a time.Duration, a number, which
	// its own JSON form replaces.)
	if f.Anonymous && jsonName == "" && out.msg != "" {
		if p.label != "Single" {
			w.errors = append(w.errors, fmt.Sprintf("%s.%s: embedded, but %s", msg, f.Name, p.label))
		}
		out.label = "Inline"
	}
	t := f.Type
	pointer := t.Kind() == reflect.Pointer
	if out.msg != "" {
		elem := t
		for elem.Kind() == reflect.Pointer || (elem.Kind() == reflect.Slice && p.label == "Repeated") || elem.Kind() == reflect.Map {
			elem = elem.Elem()
		}
		if got := w.message(elem); got != out.msg {
			w.errors = append(w.errors, fmt.Sprintf("%s.%s: Go type %s is message %q, generated.proto says %q", msg, f.Name, elem, got, out.msg))
		}
	}
	// gogo-protobuf writes every non-pointer field, zero or not; Go's JSON leaves a zero out only
	// for `omitempty`/`omitzero` fields. So a zero on the wire is "absent" exactly for a single
	// non-pointer scalar (string, number, bool, bytes) with one of those options, or a
	// non-pointer struct with `omitzero` (`ObjectMeta.creationTimestamp`). Lists and maps put
	// nothing on the wire when empty, and pointers are on the wire only when set.
	if out.label == "Single" && !pointer {
		if out.msg == "" {
			out.omitZero = opts["omitempty"] || opts["omitzero"]
		} else {
			out.omitZero = t.Kind() == reflect.Struct && opts["omitzero"]
		}
	}
}

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
// the outputs into schema.tsv, from which it writes informer-proto's table, and docs.tsv.
//
// Beyond the table, it keeps what a generator of typed code needs (not informer-proto's table):
// from generated.proto's comments each message's and field's first sentence (a D row) and the
// field's +optional/+required markers; from the Go sources of each kind (types.go, its comment
// tags, as client-gen reads them) its plural, scope and client verbs.
//
// Output (stdout), tab-separated, kinds sorted, then messages sorted, each followed by its fields
// in number order, and each message and field by its doc when it has one:
//
//	K <group> <version> <kind> <message> <plural> <namespaced> <verbs>
//	M <message>
//	F <message> <number> <json> <type> <label> <message type or -> <omit zero> <required>
//	D <message> <number or -> <first sentence>
//
// <message> is the proto message's full name without "k8s.io." (api.core.v1.Pod). <type> is
// string, bytes, int32, int64, bool, double or message; <label> is Single, Repeated, Map
// (map<string, type>) or Inline (an embedded struct whose fields Go's JSON merges into the
// parent); <omit zero> is true when a zero on the wire means the field is absent. <required>
// follows kube-openapi's rule: a +required marker makes a field required, else +optional makes it
// optional, else it is optional exactly when its JSON tag has omitempty or omitzero. <plural>,
// <namespaced> and <verbs> (sorted, comma-separated, - for none) are "-" for a kind without
// +genclient, which has no client of its own (core/v1 Binding).
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
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
	name   string
	ty     string // a scalar type or a message's full name
	label  string // Single, Repeated or Map
	doc    string // the first sentence of its comment
	marker string // "required", "optional" or "", from its comment's +required/+optional
}

// field is one row of the output.
type field struct {
	tag      int
	json     string
	ty       string
	label    string
	msg      string
	omitZero bool
	required bool
	doc      string
}

type walker struct {
	// Proto messages by full name, from the generated.proto files read so far.
	protos map[string]map[int]protoField
	// The first sentence of each message's comment, by full name.
	msgDocs map[string]string
	// Packages whose generated.proto was read.
	read   map[string]bool
	fields map[string][]field
	// The comment tags of each type declared in a package's Go sources, by package path.
	tags   map[string]map[string][]string
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
	w := &walker{
		protos:  map[string]map[int]protoField{},
		msgDocs: map[string]string{},
		read:    map[string]bool{},
		fields:  map[string][]field{},
		tags:    map[string]map[string][]string{},
	}
	var kinds []string
	for gvk, t := range scheme.AllKnownTypes() {
		// Kinds with no protobuf form (meta.k8s.io's Table) are served as JSON only.
		if gvk.Version == runtime.APIVersionInternal || !w.hasMessage(t) {
			continue
		}
		msg := w.message(t)
		if isResource(t) {
			plural, namespaced, verbs := w.client(t)
			kinds = append(kinds, strings.Join([]string{"K", gvk.Group, gvk.Version, gvk.Kind, msg, plural, namespaced, verbs}, "\t"))
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
	doc := func(name, number, text string) {
		if text != "" {
			lines = append(lines, strings.Join([]string{"D", name, number, text}, "\t"))
		}
	}
	for _, name := range names {
		lines = append(lines, "M\t"+name)
		doc(name, "-", w.msgDocs[name])
		for _, f := range w.fields[name] {
			msg := f.msg
			if msg == "" {
				msg = "-"
			}
			lines = append(lines, strings.Join([]string{
				"F", name, strconv.Itoa(f.tag), f.json, f.ty, f.label, msg, strconv.FormatBool(f.omitZero), strconv.FormatBool(f.required),
			}, "\t"))
			doc(name, strconv.Itoa(f.tag), f.doc)
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

// packageDir is the directory of Go package pkgPath, in the module of moduleDirs it belongs to.
func packageDir(pkgPath string) string {
	dir, root := "", ""
	for module, d := range moduleDirs {
		if (pkgPath == module || strings.HasPrefix(pkgPath, module+"/")) && len(module) > len(root) {
			dir, root = filepath.Join(d, strings.TrimPrefix(pkgPath, module)), module
		}
	}
	return dir
}

// readProto reads the generated.proto of Go package pkgPath into w.protos, and the first
// sentence of each message's and field's comment.
func (w *walker) readProto(pkgPath string) {
	if w.read[pkgPath] {
		return
	}
	w.read[pkgPath] = true
	path := filepath.Join(packageDir(pkgPath), "generated.proto")
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
	// The comment lines above the current line, without their "//".
	var comment []string
	for scanner.Scan() {
		line++
		text := strings.TrimSpace(scanner.Text())
		if c, ok := strings.CutPrefix(text, "//"); ok {
			comment = append(comment, c)
			continue
		}
		above := comment
		comment = nil
		if i := strings.Index(text, "//"); i >= 0 {
			text = strings.TrimSpace(text[:i])
		}
		switch {
		case strings.HasPrefix(text, "message "):
			name := strings.TrimSuffix(strings.TrimPrefix(text, "message "), " {")
			current = map[int]protoField{}
			w.protos[pkg+"."+name] = current
			w.msgDocs[pkg+"."+name] = firstSentence(above)
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
			f.doc = firstSentence(above)
			f.marker = marker(above)
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
		out := field{tag: n, json: p.name, ty: p.ty, label: p.label, doc: p.doc, required: p.marker == "required"}
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
	if p.marker == "" {
		out.required = !opts["omitempty"] && !opts["omitzero"]
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

// marker is "required" or "optional" when comment (lines without "//") carries a +required or
// +optional marker (+required wins, as in kube-openapi), else "".
func marker(comment []string) string {
	found := ""
	for _, c := range comment {
		switch strings.TrimSpace(c) {
		case "+required":
			return "required"
		case "+optional":
			found = "optional"
		}
	}
	return found
}

// firstSentence is the first sentence of comment's first paragraph (lines without "//"), marker
// lines (+...) left out, on one line: up to the first ". ", or the whole paragraph.
func firstSentence(comment []string) string {
	var words []string
	for _, c := range comment {
		c = strings.TrimSpace(c)
		if strings.HasPrefix(c, "+") {
			continue
		}
		if c == "" {
			if len(words) > 0 {
				break
			}
			continue
		}
		words = append(words, strings.Fields(c)...)
	}
	text := strings.Join(words, " ")
	if i := strings.Index(text, ". "); i >= 0 {
		text = text[:i+1]
	}
	return text
}

// clientVerbs are the verbs client-gen generates for a kind with +genclient and no verb tags;
// the status ones only for a type with a Status field and no +genclient:noStatus.
var clientVerbs = []string{"apply", "create", "delete", "deleteCollection", "get", "list", "patch", "update", "watch"}
var statusVerbs = []string{"applyStatus", "updateStatus"}

// client is what client-gen makes of kind type t from its comment tags in the Go sources:
// the plural (+resourceName, else the lowercase plural of its name), "true" or "false" for
// namespaced (+genclient:nonNamespaced) and the sorted verbs (+genclient:noVerbs, onlyVerbs,
// skipVerbs, readonly, noStatus); "-" for each when t has no +genclient.
func (w *walker) client(t reflect.Type) (plural, namespaced, verbs string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tags := w.typeTags(t.PkgPath())[t.Name()]
	value := func(name string) (string, bool) {
		for _, tag := range tags {
			if tag == name {
				return "", true
			}
			if v, ok := strings.CutPrefix(tag, name+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	if v, ok := value("+genclient"); !ok || v == "false" {
		return "-", "-", "-"
	}
	plural = lowercasePlural(t.Name())
	if name, ok := value("+resourceName"); ok && name != "" {
		plural = name
	}
	namespaced = "true"
	if _, ok := value("+genclient:nonNamespaced"); ok {
		namespaced = "false"
	}
	all := append([]string{}, clientVerbs...)
	if _, hasStatus := t.FieldByName("Status"); hasStatus {
		if _, no := value("+genclient:noStatus"); !no {
			all = append(all, statusVerbs...)
		}
	}
	chosen := all
	split := func(list string) map[string]bool {
		out := map[string]bool{}
		for _, v := range strings.Split(list, ",") {
			out[strings.TrimSpace(v)] = true
		}
		return out
	}
	keep := func(pick func(string) bool) {
		chosen = nil
		for _, v := range all {
			if pick(v) {
				chosen = append(chosen, v)
			}
		}
	}
	if _, ok := value("+genclient:noVerbs"); ok {
		chosen = nil
	} else if _, ok := value("+genclient:readonly"); ok {
		only := split("get,list,watch")
		keep(func(v string) bool { return only[v] })
	} else if list, ok := value("+genclient:onlyVerbs"); ok {
		only := split(list)
		keep(func(v string) bool { return only[v] })
	} else if list, ok := value("+genclient:skipVerbs"); ok {
		skip := split(list)
		keep(func(v string) bool { return !skip[v] })
	}
	sort.Strings(chosen)
	verbs = strings.Join(chosen, ",")
	if verbs == "" {
		verbs = "-"
	}
	return plural, namespaced, verbs
}

// lowercasePlural is client-gen's plural of a kind's name: lowercase, with English plural
// endings, and Endpoints its own plural.
func lowercasePlural(name string) string {
	if name == "Endpoints" || len(name) < 2 {
		return strings.ToLower(name)
	}
	last, before := name[len(name)-1], name[len(name)-2]
	var plural string
	switch {
	case last == 's' || last == 'x' || last == 'z':
		plural = name + "es"
	case last == 'y' && !strings.ContainsRune("aeiou", rune(before)):
		plural = name[:len(name)-1] + "ies"
	case last == 'h' && (before == 'c' || before == 's'):
		plural = name + "es"
	case last == 'e' && before == 'f':
		plural = name[:len(name)-2] + "ves"
	case last == 'f':
		plural = name[:len(name)-1] + "ves"
	default:
		plural = name + "s"
	}
	return strings.ToLower(plural)
}

// typeTags are the comment tags (lines starting with "+") of each type declared in Go package
// pkgPath, from its doc comment and the comment block one blank line above it, where the
// Kubernetes sources keep them (as gengo reads them).
func (w *walker) typeTags(pkgPath string) map[string][]string {
	if tags, ok := w.tags[pkgPath]; ok {
		return tags
	}
	tags := map[string][]string{}
	w.tags[pkgPath] = tags
	dir := packageDir(pkgPath)
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.errors = append(w.errors, fmt.Sprintf("%s: %v", pkgPath, err))
		return tags
	}
	for _, e := range entries {
		name := e.Name()
		// Generated files declare no kind.
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") || strings.HasPrefix(name, "generated.") {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			w.errors = append(w.errors, fmt.Sprintf("%s: %v", pkgPath, err))
			continue
		}
		line := func(p token.Pos) int { return fset.Position(p).Line }
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gen.Specs) == 1 {
					doc = gen.Doc
				}
				top := line(gen.Pos())
				var groups []*ast.CommentGroup
				if doc != nil {
					groups = append(groups, doc)
					top = line(doc.Pos())
				}
				for _, g := range file.Comments {
					if line(g.End()) == top-2 {
						groups = append(groups, g)
					}
				}
				for _, g := range groups {
					for _, c := range g.List {
						text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
						if strings.HasPrefix(text, "+") {
							tags[ts.Name.Name] = append(tags[ts.Name.Name], text)
						}
					}
				}
			}
		}
	}
	return tags
}

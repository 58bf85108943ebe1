# tests/promtext.awk — a strict check of Prometheus' text exposition format (0.0.4), for the
# tests that cannot count on promtool (Debian 12 ships it only inside the prometheus server
# package). Prints one line per fault, "LINE: what", and exits 1 when there is any.
#   - a metric name matches [a-zA-Z_:][a-zA-Z0-9_:]*, a label name [a-zA-Z_][a-zA-Z0-9_]*
#     (not starting with __), and, by this project's convention, every name starts toposcope_
#   - # HELP and # TYPE name a family once each, before its first sample; TYPE is counter,
#     gauge, summary, histogram or untyped; HELP text escapes only \\ and \n
#   - a family's samples are contiguous; a counter's name ends in _total; a summary's samples
#     are NAME{quantile=...}, NAME_sum and NAME_count, a histogram's NAME_bucket{le=...},
#     NAME_sum, NAME_count
#   - label values are double-quoted with only \\, \" and \n escaped; no label twice in a
#     sample; no series (name and labels) twice
#   - a value is a float as Go's ParseFloat reads it, or NaN, +Inf, -Inf; an optional
#     timestamp is an integer; the file ends with a newline
function fault(msg) { printf "%d: %s\n", NR, msg; bad = 1 }
function family_of(name,    f) {
    # the family a sample belongs to: its own name, or a summary's/histogram's base
    if (name in type) return name
    f = name; sub(/_(sum|count|bucket)$/, "", f)
    if (f != name && (f in type) && (type[f] == "summary" || type[f] == "histogram")) return f
    return name
}
# labels: the text between { and }, parsed strictly; sets lab[name] = value, returns the
# canonical form or "" with a fault
function parse_labels(s,    out, name, val, c, i, n) {
    delete lab; out = ""; i = 1; n = length(s)
    while (i <= n) {
        if (!match(substr(s, i), /^[a-zA-Z_][a-zA-Z0-9_]*/)) { fault("bad label name at '" substr(s, i) "'"); return "" }
        name = substr(s, i, RLENGTH); i += RLENGTH
        if (name ~ /^__/) fault("label name " name " is reserved")
        if (substr(s, i, 2) != "=\"") { fault("label " name ": expected =\""); return "" }
        i += 2; val = ""
        while (1) {
            if (i > n) { fault("label " name ": unterminated value"); return "" }
            c = substr(s, i, 1)
            if (c == "\"") { i++; break }
            if (c == "\\") {
                c = substr(s, i + 1, 1)
                if (c != "\\" && c != "\"" && c != "n") { fault("label " name ": bad escape \\" c); return "" }
                val = val "\\" c; i += 2; continue
            }
            val = val c; i++
        }
        if (name in lab) fault("label " name " twice")
        lab[name] = val
        out = out name "=" val "\001"
        if (i > n) break
        if (substr(s, i, 1) != ",") { fault("expected , between labels at '" substr(s, i) "'"); return "" }
        i++
    }
    return out
}
BEGIN { bad = 0; last = "" }
/^# HELP / {
    name = $3
    if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) fault("bad metric name in HELP: " name)
    if (name in help) fault("second HELP for " name)
    if (name in sampled) fault("HELP for " name " after its samples")
    text = substr($0, length("# HELP " name) + 2)
    t = text; gsub(/\\\\|\\n/, "", t)
    if (t ~ /\\/) fault("HELP text of " name ": bad escape")
    help[name] = 1; next
}
/^# TYPE / {
    name = $3
    if (NF != 4) fault("TYPE wants a name and a type")
    if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) fault("bad metric name in TYPE: " name)
    if ($4 !~ /^(counter|gauge|summary|histogram|untyped)$/) fault("bad type " $4)
    if (name in type) fault("second TYPE for " name)
    if (name in sampled) fault("TYPE for " name " after its samples")
    if ($4 == "counter" && name !~ /_total$/) fault("counter " name " does not end in _total")
    type[name] = $4; next
}
/^#/ { next }
/^$/ { next }
{
    line = $0
    if (!match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) { fault("bad metric name: " line); next }
    name = substr(line, 1, RLENGTH); rest = substr(line, RLENGTH + 1)
    if (name !~ /^toposcope_/) fault(name " lacks the prefix toposcope_")
    labels = ""
    if (substr(rest, 1, 1) == "{") {
        # the closing brace: the first } outside a quoted value
        inq = 0; end = 0
        for (i = 2; i <= length(rest); i++) {
            c = substr(rest, i, 1)
            if (inq && c == "\\") { i++; continue }
            if (c == "\"") inq = !inq
            else if (!inq && c == "}") { end = i; break }
        }
        if (!end) { fault("unterminated label set"); next }
        labels = parse_labels(substr(rest, 2, end - 2))
        rest = substr(rest, end + 1)
    } else delete lab
    if (rest !~ /^ [^ ]+( -?[0-9]+)?$/) { fault("expected ' VALUE [TIMESTAMP]' after " name ", got '" rest "'"); next }
    split(substr(rest, 2), vt, " ")
    if (vt[1] !~ /^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$/ && vt[1] !~ /^(NaN|[-+]Inf)$/)
        fault("bad value " vt[1] " of " name)
    fam = family_of(name)
    if (!(fam in type)) fault(name ": no TYPE before its first sample")
    if (!(fam in help)) fault(name ": no HELP before its first sample")
    if ((fam in done) && fam != last) fault("samples of " fam " are not contiguous")
    if (last != "" && last != fam) done[last] = 1
    last = fam; sampled[fam] = 1
    if (type[fam] == "summary" && name == fam && !("quantile" in lab)) fault(name ": a summary sample without quantile")
    if (type[fam] == "histogram" && name == fam) fault(name ": a histogram has only _bucket, _sum, _count")
    if (type[fam] == "histogram" && name ~ /_bucket$/ && !("le" in lab)) fault(name ": a bucket without le")
    key = name "\002" labels
    if (key in series) fault("series " name "{" labels "} twice")
    series[key] = 1
}
END {
    if (NR == 0) fault("empty")
    if (bad) exit 1
}

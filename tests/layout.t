#!/bin/bash
# lib/'s layout (lib/README.md): every public header lib/toposcope/X.h belongs to the part whose
# folder holds X.c, and a part includes only the headers of the parts below it, so the
# dependencies between lib/'s folders run one way. A new include that points up fails here,
# naming the file and the header.
cd "$(dirname "$0")/.." || exit 1
. tests/tap.sh

# Each part and the parts it may use (lib/README.md draws the same picture).
declare -A below=(
  [util]=""
  [fabric]="util"
  [probe]="util fabric"
  [discover]="util fabric probe"
  [links]="util fabric probe"
  [measure]="util fabric probe discover links"
  [place]="util fabric"
  [records]="util fabric probe links"
  [site]="util place"
)

# the part of a public header: the folder holding the source of the same name
declare -A part_of
orphans=()
for h in lib/toposcope/*.h; do
  name=$(basename "$h" .h)
  src=(lib/*/"$name".c)
  if [ -e "${src[0]}" ] && [ ${#src[@]} -eq 1 ]; then
    part=${src[0]#lib/}; part_of[$name]=${part%%/*}
  else
    orphans+=("$h")
  fi
done
ok $(( ${#orphans[@]} != 0 )) "every public header is named after one source in one part"
for h in "${orphans[@]}"; do echo "$h: no lib/PART/$(basename "$h" .h).c, or more than one"; done | diag

parts=()
for d in lib/*/; do
  d=${d%/}; d=${d#lib/}
  [ "$d" = toposcope ] || parts+=("$d")
done
for p in "${parts[@]}"; do
  if [ -z "${below[$p]+set}" ]; then
    ok 1 "lib/$p/ has a place in the layering"
    echo "add lib/$p/ to this test's table and to lib/README.md" | diag
    continue
  fi
  bad=()
  # the part's sources and the public headers it owns (its tests may use any part to make
  # their fixtures)
  files=(lib/"$p"/*.[ch])
  for name in "${!part_of[@]}"; do
    [ "${part_of[$name]}" = "$p" ] && files+=(lib/toposcope/"$name".h)
  done
  for f in "${files[@]}"; do
    [ -e "$f" ] || continue
    while read -r inc; do
      case $inc in
        toposcope/*) name=${inc#toposcope/}; name=${name%.h}; q=${part_of[$name]:-?} ;;
        */*) q=${inc%%/*} ;;
        *) continue ;;   # the part's own private headers, test fixtures
      esac
      [ "$q" = "$p" ] && continue
      case " ${below[$p]} " in *" $q "*) ;; *) bad+=("$f includes $inc (part $q)") ;; esac
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
  done
  ok $(( ${#bad[@]} != 0 )) "lib/$p/ uses only ${below[$p]:-nothing else}"
  for b in "${bad[@]}"; do echo "$b"; done | diag
done
tap_end

# Sourced by the bench scripts that own a generated section of
# docs/benchmarks.md, between <!-- NAME:begin --> and <!-- NAME:end -->.
#   bench_setup NAME [BUILD_DIR]   sets ROOT, BUILD_DIR (absolute), BENCH (the
#                                  arbiter-bench binary) and DOC; exits 1 when
#                                  BENCH is not built or DOC lacks NAME's markers
#   replace_section NAME FILE      puts FILE's text (trailing blank lines
#                                  dropped) between the markers, the rest kept;
#                                  refuses (returns 1, DOC unchanged) when a
#                                  heading between them is not in FILE

bench_setup() {
  local name=$1
  ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  BUILD_DIR=${2:-build}
  [[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
  BENCH=$BUILD_DIR/arbiter-bench
  DOC=$ROOT/docs/benchmarks.md
  [[ -x $BENCH ]] || { echo "$name: $BENCH not built" >&2; exit 1; }
  grep -q "<!-- $name:begin -->" "$DOC" && grep -q "<!-- $name:end -->" "$DOC" ||
    { echo "$name: markers missing in $DOC" >&2; exit 1; }
}

replace_section() {
  local name=$1 section=$2
  # A heading between the markers that the new text does not have is
  # hand-written text someone put inside the generated part: refuse, rather
  # than lose it (two hand-written sections were lost that way).
  local lost
  lost=$(awk -v begin="<!-- $name:begin -->" -v end="<!-- $name:end -->" -v section="$section" '
    BEGIN { while ((getline line < section) > 0) if (line ~ /^#/) have[line] = 1 }
    $0 == begin { inside = 1; next }
    $0 == end { inside = 0 }
    inside && /^#/ && !($0 in have)' "$DOC")
  if [[ -n $lost ]]; then
    echo "$name: $DOC has headings inside its generated section that the new text lacks (hand-written text? move it outside the markers; a part the generator no longer writes: delete it by hand):" >&2
    echo "$lost" >&2
    return 1
  fi
  awk -v section="$section" -v begin="<!-- $name:begin -->" -v end="<!-- $name:end -->" '
    $0 == begin {
      print
      n = 0
      while ((getline line < section) > 0) text[++n] = line
      while (n > 0 && text[n] == "") --n
      for (i = 1; i <= n; ++i) print text[i]
      skip = 1
      next
    }
    $0 == end { skip = 0 }
    !skip' "$DOC" > "$DOC.new" && mv "$DOC.new" "$DOC"
}

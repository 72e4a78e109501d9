# Sourced by the bench scripts that own a generated section of
# docs/benchmarks.md, between <!-- NAME:begin --> and <!-- NAME:end -->.
#   bench_setup NAME [BUILD_DIR]   sets ROOT, BUILD_DIR (absolute), BENCH (the
#                                  arbiter-bench binary) and DOC; exits 1 when
#                                  BENCH is not built or DOC lacks NAME's markers
#   replace_section NAME FILE      puts FILE's text (trailing blank lines
#                                  dropped) between the markers, the rest kept

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

#!/usr/bin/env bash
# Builds the reference ExactSubstr tool of Lee et al. (ACL 2022), google-research/deduplicate-text-datasets
# (the Rust `dedup_dataset` binary that text-dedup's suffix_array.py drives), offline, from Debian
# bookworm's packaged Rust toolchain and crate sources: no crates.io access is needed.
#
#   DTD_SRC=/tmp/dtd/src bash benchmarks/setup_substrings_reference.sh
#
# DTD_SRC (default /tmp/dtd/src): an unpacked checkout of the upstream repository, e.g.
#   git clone https://github.com/google-research/deduplicate-text-datasets /tmp/dtd/src
#   git -C /tmp/dtd/src checkout 4e9888ac3f95dc4f6169867a04c4c19df02dafe3
# Tested with upstream commit 4e9888ac3f95dc4f6169867a04c4c19df02dafe3 (2024-05-21, "Fix issue #45:
# out of range bug (#46)"), whose files hash to (sha256):
#   src/main.rs   b13569b97eb47ee21a15d48c5c4829ee33e11070de42a0fb86ed416085b61681
#   src/table.rs  111c63385ab217db8bbe346854b03491aef317b824a71b1195d2aa56dd74cb06
#   Cargo.toml    8edfa6c0df24910c2f4a5ce14df936223e2b0edd5bd0e5376d4113008b7ee84f
# (a different checkout is built too, with a warning).
#
# Idempotent: installs what is missing, rewrites the build copy, lets cargo rebuild what changed.
# The last line printed is the path of the binary.
#
# Every change against upstream (the build copy is benchmarks/out/dtd-build; upstream is not touched):
#   * src/main.rs, src/table.rs: copied unchanged (zero changes to the reference's code).
#   * Cargo.toml (a copy):
#       - zstd "0.5"        -> "0.12"   (Debian has 0.12.1; main.rs only says `extern crate zstd;`
#                                        and never calls it)
#       - crossbeam "0.3"   -> path shims/crossbeam  (Debian has only crossbeam 0.8, whose scope API
#                                        differs; see the shim below)
#       - filebuffer "0.4"  -> path shims/filebuffer (Debian has no filebuffer)
#       - bitvec "1"        -> removed  (Debian has no bitvec; main.rs uses it only in a
#                                        commented-out function, no `extern crate bitvec`)
#       - clap "3.1.1" (derive): unchanged; resolves to Debian's 3.2.23.
#   * shims/crossbeam (package "crossbeam" 0.3.99): crossbeam 0.3's scoped threads --
#       scope(|s| ..) -> R, s.spawn(move || ..) -> ScopedJoinHandle<T>, handle.join() -> T
#       (a handle may be joined after its scope ended, as cmd_collect does) -- on
#       std::thread::scope (Rust >= 1.63) plus one channel per thread for the result.
#   * shims/filebuffer (package "filebuffer" 0.4.99): FileBuffer::open(path) -> io::Result<FileBuffer>,
#       Deref<Target=[u8]>: a read-only memory map (memmap2 0.5, Debian), as filebuffer 0.4 is.
#   * .cargo/config.toml: crates-io replaced by the Debian directory registry /usr/share/cargo/registry.
#   * Built with Debian's /usr/bin/cargo (0.66) and /usr/bin/rustc (1.63), `--release --offline`
#     (upstream's scripts call target/debug, whose [profile.dev] is opt-level 3 as well).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DTD_SRC="${DTD_SRC:-/tmp/dtd/src}"
BUILD="${DTD_BUILD:-$HERE/out/dtd-build}"
TESTED_COMMIT=4e9888ac3f95dc4f6169867a04c4c19df02dafe3

if [ ! -f "$DTD_SRC/src/main.rs" ] || [ ! -f "$DTD_SRC/src/table.rs" ]; then
  echo "no upstream sources in DTD_SRC=$DTD_SRC (want src/main.rs, src/table.rs); get them with" >&2
  echo "  git clone https://github.com/google-research/deduplicate-text-datasets $DTD_SRC && git -C $DTD_SRC checkout $TESTED_COMMIT" >&2
  exit 1
fi

# 1. Debian packages: the toolchain, the crate sources, libzstd for zstd-sys.
PKGS="cargo rustc pkg-config libzstd-dev librust-clap-3-dev librust-clap-derive-3-dev
      librust-zstd-dev librust-memmap2-dev"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get install -y --no-install-recommends $missing >&2 || {
    $SUDO apt-get update >&2 && $SUDO apt-get install -y --no-install-recommends $missing >&2; }
fi

# 2. The build copy.
check() {  # file expected-sha256
  local got; got="$(sha256sum "$DTD_SRC/$1" | cut -d' ' -f1)"
  [ "$got" = "$2" ] || echo "warning: $1 differs from the tested commit $TESTED_COMMIT (sha256 $got)" >&2
}
check src/main.rs b13569b97eb47ee21a15d48c5c4829ee33e11070de42a0fb86ed416085b61681
check src/table.rs 111c63385ab217db8bbe346854b03491aef317b824a71b1195d2aa56dd74cb06
check Cargo.toml 8edfa6c0df24910c2f4a5ce14df936223e2b0edd5bd0e5376d4113008b7ee84f

mkdir -p "$BUILD/src" "$BUILD/.cargo" "$BUILD/shims/crossbeam/src" "$BUILD/shims/filebuffer/src" "$BUILD/scripts"
copy() { cmp -s "$1" "$2" || cp "$1" "$2"; }      # keeps mtimes, so cargo does not rebuild needlessly
copy "$DTD_SRC/src/main.rs" "$BUILD/src/main.rs"
copy "$DTD_SRC/src/table.rs" "$BUILD/src/table.rs"
for f in "$DTD_SRC"/scripts/*; do copy "$f" "$BUILD/scripts/$(basename "$f")"; done
if [ -d "$DTD_SRC/.git" ]; then
  git -C "$DTD_SRC" rev-parse HEAD > "$BUILD/UPSTREAM_COMMIT.new"
else
  echo "${DTD_COMMIT:-unknown (tested: $TESTED_COMMIT)}" > "$BUILD/UPSTREAM_COMMIT.new"
fi
copy "$BUILD/UPSTREAM_COMMIT.new" "$BUILD/UPSTREAM_COMMIT"; rm -f "$BUILD/UPSTREAM_COMMIT.new"

write() {  # path; content on stdin; rewritten only when it changes
  local tmp; tmp="$(mktemp)"; cat > "$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}

write "$BUILD/Cargo.toml" <<'TOML'
# Upstream's Cargo.toml with the dependencies changed to what Debian bookworm packages
# (see benchmarks/setup_substrings_reference.sh).
[package]
name = "dedup_dataset" # the name of the package
version = "1.0.0"    # the current version, obeying semver

authors = ["Nicholas Carlini <nicholas@carlini.com>"]

[profile.dev]
opt-level = 3
overflow-checks = false  # Go FAAASSTTT!

[dependencies]
zstd = "0.12"                                # upstream: "0.5"
crossbeam = { path = "shims/crossbeam" }     # upstream: "0.3"
filebuffer = { path = "shims/filebuffer" }   # upstream: "0.4"
clap = { version = "3.1.1", features = ["derive"] }
# bitvec = "1"                               # upstream; unused (only in commented-out code)
TOML

write "$BUILD/.cargo/config.toml" <<'TOML'
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "/usr/share/cargo/registry"

[net]
offline = true
TOML

write "$BUILD/shims/crossbeam/Cargo.toml" <<'TOML'
[package]
name = "crossbeam"
version = "0.3.99"
edition = "2018"
description = "crossbeam 0.3's scoped-thread API on std::thread::scope (a local shim)"
TOML

write "$BUILD/shims/crossbeam/src/lib.rs" <<'RS'
//! The part of crossbeam 0.3 that dedup_dataset uses: `scope(|s| ..)` returning the closure's value,
//! `s.spawn(move || ..)` returning a handle, `handle.join()` returning the thread's value (also after
//! the scope has ended: every thread is joined when the scope ends, its value waits in a channel).
use std::sync::mpsc;

pub struct Scope<'s, 'env: 's> {
    inner: &'s std::thread::Scope<'s, 'env>,
}

pub struct ScopedJoinHandle<T> {
    rx: mpsc::Receiver<T>,
}

impl<T> ScopedJoinHandle<T> {
    pub fn join(self) -> T {
        self.rx.recv().expect("a scoped thread panicked")
    }
}

impl<'s, 'env> Scope<'s, 'env> {
    pub fn spawn<F, T>(&self, f: F) -> ScopedJoinHandle<T>
    where
        F: FnOnce() -> T + Send + 's,
        T: Send + 's,
    {
        let (tx, rx) = mpsc::channel();
        self.inner.spawn(move || {
            let _ = tx.send(f());
        });
        ScopedJoinHandle { rx }
    }
}

pub fn scope<'env, F, R>(f: F) -> R
where
    F: for<'s> FnOnce(&Scope<'s, 'env>) -> R,
{
    std::thread::scope(|s| f(&Scope { inner: s }))
}
RS

write "$BUILD/shims/filebuffer/Cargo.toml" <<'TOML'
[package]
name = "filebuffer"
version = "0.4.99"
edition = "2018"
description = "filebuffer 0.4's FileBuffer::open + Deref<[u8]> on memmap2 (a local shim)"

[dependencies]
memmap2 = "0.5"
TOML

write "$BUILD/shims/filebuffer/src/lib.rs" <<'RS'
//! The part of filebuffer 0.4 that dedup_dataset uses: `FileBuffer::open(path)` and the file's bytes
//! through `Deref<Target = [u8]>`, as a read-only memory map (as filebuffer does).
use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;

pub struct FileBuffer {
    map: Option<memmap2::Mmap>, // None: an empty file (which cannot be mapped)
}

impl FileBuffer {
    pub fn open<P: AsRef<Path>>(path: P) -> io::Result<FileBuffer> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            return Ok(FileBuffer { map: None });
        }
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(FileBuffer { map: Some(map) })
    }
}

impl Deref for FileBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.map {
            Some(m) => &m[..],
            None => &[],
        }
    }
}
RS

# 3. Build, offline, with Debian's toolchain (not a rustup one that may come first on PATH).
export CARGO_HOME="$BUILD/.cargo-home" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
mkdir -p "$CARGO_HOME"
( cd "$BUILD" && /usr/bin/cargo build --release --offline >&2 )
BIN="$BUILD/target/release/dedup_dataset"
test -x "$BIN"
echo "$BIN"

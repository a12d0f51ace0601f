#!/usr/bin/env bash
# Checks what `make release` put in DIR (default dist/) for VERSION: every
# archive and package is there and matches SHA256SUMS; the archive for this
# machine runs and says its version; the others are executables for their
# OS and architecture, built without cgo, with the version linked in; the
# archives and packages carry the license and the changelog (lintian finds
# no errors in the .deb where it is installed; rpm -qip names the license);
# the packages suggest the QEMU of their architecture; install.sh installs
# from DIR and refuses a tampered archive; SHA256SUMS lists the formula; the
# controller's image archive names an image index of linux/amd64 and
# linux/arm64 images of this version (skopeo copies it whole where installed;
# as root with umoci, this machine's image is unpacked and run as its user).
set -euo pipefail
dir=${1:-dist}
version=${2:?usage: check-release.sh DIR VERSION}
cd "$dir"
fail() { echo "check-release: $*" >&2; exit 1; }
for tool in go file unzip dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null || fail "needs $tool (Debian: apt-get install file unzip dpkg coreutils)"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sha256sum --check --quiet SHA256SUMS || fail "SHA256SUMS does not match the files"
for f in linux_amd64.tar.gz linux_arm64.tar.gz darwin_amd64.tar.gz darwin_arm64.tar.gz windows_amd64.zip \
  linux_amd64.deb linux_arm64.deb linux_amd64.rpm linux_arm64.rpm source.tar.gz; do
  grep -q "  sbf_${version}_$f\$" SHA256SUMS || fail "sbf_${version}_$f is missing or not in SHA256SUMS"
done
grep -q '  sbf\.rb$' SHA256SUMS || fail "SHA256SUMS does not list sbf.rb"
grep -q '[^[:space:]]' release-notes.md || fail "release-notes.md (CHANGELOG.md's section) is empty"

host=linux_$(go env GOARCH)
mkdir "$tmp/$host"
tar -xzf "sbf_${version}_$host.tar.gz" -C "$tmp/$host"
out=$("$tmp/$host/sbf" version)
echo "$host: $out"
[[ $out == "sbf v$version (commit "* ]] || fail "the $host archive's sbf version says: $out"
# sbf hands MCP to sbf-server, beside it in the archive. (The help is read whole: `| grep -q` would
# stop reading at the match, and sbf's next write would end it with SIGPIPE, a failure under pipefail.)
help=$("$tmp/$host/sbf" mcp --help) || fail "the $host archive's sbf mcp --help failed"
[[ $help == *"Streamable HTTP"* ]] || fail "the $host archive's sbf mcp does not reach sbf-server"
# The kubevirt backend's program, versioned like sbf.
out=$("$tmp/$host/sbf-kubevirt" version) || fail "the $host archive's sbf-kubevirt version failed"
[[ $out == *"v$version"* ]] || fail "the $host archive's sbf-kubevirt version says: $out"

for target in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64; do
  mkdir -p "$tmp/$target"
  exe=sbf
  if [[ $target == windows_* ]]; then
    exe=sbf.exe
    (cd "$tmp/$target" && unzip -q -o "$OLDPWD/sbf_${version}_$target.zip")
  else
    tar -xzf "sbf_${version}_$target.tar.gz" -C "$tmp/$target"
  fi
  for f in README.md LICENSE CHANGELOG.md docs/cli.md docs/mcp.md completions/sbf.bash completions/_sbf completions/sbf.fish \
    systemd/sbf-serve.service \
    sbf.entitlements "${exe/sbf/sbf-server}" "${exe/sbf/sbf-kubevirt}"; do
    [ -f "$tmp/$target/$f" ] || fail "$target archive has no $f"
  done
  kind=$(file -b "$tmp/$target/$exe")
  case $target in
    linux_amd64) want="ELF 64-bit*x86-64*" ;;
    linux_arm64) want="ELF 64-bit*aarch64*" ;;
    darwin_amd64) want="Mach-O 64-bit*x86_64*" ;;
    darwin_arm64) want="Mach-O 64-bit*arm64*" ;;
    windows_amd64) want="PE32+ executable*x86-64*" ;;
  esac
  # shellcheck disable=SC2053 # $want is a pattern
  [[ $kind == $want ]] || fail "$target: file says $kind"
  info=$(go version -m "$tmp/$target/$exe")
  goos=${target%_*} goarch=${target#*_}
  for want in "GOOS=$goos" "GOARCH=$goarch" "CGO_ENABLED=0" "-trimpath=true"; do
    grep -qF -- "$want" <<<"$info" || fail "$target: go version -m does not say $want"
  done
  # -trimpath keeps -ldflags out of the build information: look for the
  # linked version itself.
  grep -qaF -- "v$version" "$tmp/$target/$exe" || fail "$target: v$version is not linked in"
  echo "$target: ${kind%%,*}; GOOS=$goos GOARCH=$goarch CGO_ENABLED=0, v$version"
done

for deb in sbf_"${version}"_linux_*.deb; do
  list=$(dpkg-deb -c "$deb")
  for f in ./usr/bin/sbf ./usr/bin/sbf-server ./usr/bin/sbf-kubevirt ./usr/lib/systemd/user/sbf-serve.service \
    ./usr/share/bash-completion/completions/sbf \
    ./usr/share/zsh/vendor-completions/_sbf ./usr/share/fish/vendor_completions.d/sbf.fish \
    ./usr/share/doc/sbf/copyright ./usr/share/doc/sbf/CHANGELOG.md ./usr/share/doc/sbf/changelog.gz \
    ./usr/share/doc/sbf/docs/cli.md \
    ./usr/share/man/man1/sbf.1.gz ./usr/share/man/man1/sbf-apply.1.gz; do
    grep -qF " $f" <<<"$list" || fail "$deb does not carry $f"
  done
  copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/sbf/copyright)
  grep -qx 'License: Apache-2.0' <<<"$copyright" || fail "$deb: its copyright file names no Apache-2.0 license"
  suggests=$(dpkg-deb -f "$deb" Suggests)
  case $deb in
    *_arm64.deb) [[ $suggests == *qemu-system-arm* && $suggests != *x86* ]] || fail "$deb suggests $suggests" ;;
    *) [[ $suggests == *qemu-system-x86* ]] || fail "$deb suggests $suggests" ;;
  esac
  if command -v lintian >/dev/null; then
    # Errors fail the release; warnings (a static Go binary, no man page...) are printed.
    lint=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges') || true
    [ -z "$lint" ] || echo "$lint"
    ! grep -q '^E: ' <<<"$lint" || fail "lintian finds errors in $deb"
  fi
  echo "$deb: $(dpkg-deb -f "$deb" Package Version Architecture | tr '\n' ' ')"
done
for rpm in sbf_"${version}"_linux_*.rpm; do
  kind=$(file -b "$rpm")
  [[ $kind == RPM* ]] || fail "$rpm: file says $kind"
  if command -v rpm >/dev/null; then
    list=$(rpm -qlp "$rpm" 2>/dev/null) # not piped into grep -q: pipefail would see rpm's SIGPIPE
    grep -qx /usr/lib/systemd/user/sbf-serve.service <<<"$list" || fail "$rpm does not carry the user unit"
    grep -qx /usr/share/licenses/sbf/LICENSE <<<"$list" || fail "$rpm does not carry the license"
    info=$(rpm -qip "$rpm" 2>/dev/null)
    grep -Eq '^License *: Apache-2.0' <<<"$info" || fail "rpm -qip $rpm shows no Apache-2.0 license"
    sugg=$(rpm -qp --suggests "$rpm" 2>/dev/null)
    case $rpm in
      *_arm64.rpm) [[ $sugg == *qemu-system-arm* && $sugg != *x86* ]] || fail "$rpm suggests $sugg" ;;
      *) [[ $sugg == *qemu-system-x86* ]] || fail "$rpm suggests $sugg" ;;
    esac
  fi
  echo "$rpm: $kind"
done
command -v rpm >/dev/null || echo "(rpm is not installed: the .rpm packages' contents and license were not read)"
command -v lintian >/dev/null || echo "(lintian is not installed: the .deb packages were not linted)"

# install.sh against this folder, as a person would run it against a release.
if [ "$host" = linux_amd64 ] || [ "$host" = linux_arm64 ]; then
  SBF_VERSION=$version SBF_DOWNLOAD_URL="file://$PWD" SBF_INSTALL_DIR="$tmp/bin" sh install.sh >/dev/null
  out=$("$tmp/bin/sbf" version)
  [[ $out == "sbf v$version "* ]] || fail "install.sh installed $out"
  [ -x "$tmp/bin/sbf-server" ] || fail "install.sh did not install sbf-server"
  [ -x "$tmp/bin/sbf-kubevirt" ] || fail "install.sh did not install sbf-kubevirt"
  mkdir "$tmp/tampered"
  cp SHA256SUMS "sbf_${version}_$host.tar.gz" "$tmp/tampered/"
  echo tampered >>"$tmp/tampered/sbf_${version}_$host.tar.gz"
  if SBF_DOWNLOAD_URL="file://$tmp/tampered" SBF_INSTALL_DIR="$tmp/bin2" sh install.sh 2>/dev/null; then
    fail "install.sh installed a tampered archive"
  fi
  echo "install.sh: installs from $dir, refuses a tampered archive"
fi
[ -s sbf.rb ] && ! grep -q '@[A-Z_0-9]*@' sbf.rb || fail "sbf.rb has fields left to fill"
grep -q '^  license "Apache-2.0"$' sbf.rb || fail "sbf.rb names no license"
grep -q 'environment_variables PATH:.*/opt/homebrew/bin' sbf.rb || fail "sbf.rb's service sets no PATH"
grep -q 'output: bin/"sbf-kubevirt"), "./cmd/sbf-kubevirt"' sbf.rb || fail "sbf.rb builds no sbf-kubevirt"

# The controller's image (scripts/release.sh): index.json names an image index, stored under the
# digest of its bytes, of one linux image per architecture, of this version.
image=sbf-kubevirt_${version}_oci.tar
grep -q "  $image\$" SHA256SUMS || fail "$image is missing or not in SHA256SUMS"
top=$(tar -xOf "$image" index.json) || fail "$image has no index.json"
digest=$(sed -n 's/.*"digest":"sha256:\([0-9a-f]\{64\}\)".*/\1/p' <<<"$top")
[ -n "$digest" ] || fail "$image: index.json names no image index: $top"
tar -xOf "$image" "blobs/sha256/$digest" >"$tmp/image-index" || fail "$image lacks the image index index.json names"
[ "$(sha256sum <"$tmp/image-index" | cut -d' ' -f1)" = "$digest" ] ||
  fail "$image: its image index is not sha256:$digest"
index=$(cat "$tmp/image-index")
for arch in amd64 arm64; do
  [[ $index == *'"platform":{"architecture":"'$arch'","os":"linux"'* ]] || fail "$image has no linux/$arch image"
done
[[ $index == *'"org.opencontainers.image.version":"v'$version'"'* ]] || fail "$image is not versioned v$version"
if command -v skopeo >/dev/null; then
  # What a person pushing it runs, into a folder instead of a registry: every blob is read and checked.
  skopeo copy --quiet --all "oci-archive:$image" "oci:$tmp/image:v$version" || fail "skopeo cannot copy $image"
  if command -v umoci >/dev/null && [ "$(id -u)" = 0 ]; then
    # This machine's image unpacked as a runtime's bundle, its entry point run as its user: chroot
    # stands in for the container runtime, which would need a daemon.
    skopeo copy --quiet "oci-archive:$image" "oci:$tmp/host:v$version" || fail "skopeo cannot copy $image"
    umoci unpack --image "$tmp/host:v$version" "$tmp/bundle" >/dev/null 2>&1 || fail "umoci cannot unpack $image"
    run=$(tr -d '[:space:]' <"$tmp/bundle/config.json")
    [[ $run == *'"user":{"uid":65532,"gid":65532}'* && $run == *'"args":["/usr/local/bin/sbf-kubevirt"]'* ]] ||
      fail "$image's runtime config: $run"
    out=$(env -i PATH=/usr/local/bin "$(command -v chroot)" --userspec=65532:65532 "$tmp/bundle/rootfs" \
      sbf-kubevirt version) || fail "$image's sbf-kubevirt version failed as 65532"
    [[ $out == *"v$version"* ]] || fail "$image's sbf-kubevirt version says: $out"
    help=$(env -i PATH=/usr/local/bin "$(command -v chroot)" --userspec=65532:65532 "$tmp/bundle/rootfs" \
      sbf mcp --help) || fail "$image's sbf mcp --help failed as 65532"
    [[ $help == *"Streamable HTTP"* ]] || fail "$image's sbf does not reach sbf-server"
    echo "$image: unpacked (umoci), runs as 65532:65532 ($out; sbf reaches sbf-server)"
  fi
fi
echo "$image: sha256:$digest, linux/amd64 and linux/arm64, v$version, $(du -h "$image" | cut -f1)"
command -v skopeo >/dev/null || echo "(skopeo is not installed: $image was not copied as a registry client would)"
command -v umoci >/dev/null || echo "(umoci is not installed: $image was not unpacked and run)"
echo "check-release: sbf $version OK"

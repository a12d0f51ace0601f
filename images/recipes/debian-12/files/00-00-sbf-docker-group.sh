#!/bin/sh
# sbf:debian-12 guest image: put the Lima user in the "docker" group so that
# `docker ...` works without sudo.
# Installed as /var/lib/cloud/scripts/per-boot/00-00-sbf-docker-group.sh. cloud-init runs the
# per-boot scripts in name order, so this runs before Lima's 00-lima.boot.sh; on the first
# boot that script ends every session of the user (boot/07-etc-environment.sh), so the SSH
# control master Lima then opens already carries the docker group.
# The Lima user is the one cloud-init created from the NoCloud user-data; users with a
# regular UID (>= 1000) are added as well.
set -u
getent group docker >/dev/null 2>&1 || exit 0
users=""
ud=/var/lib/cloud/instance/user-data.txt
if [ -r "$ud" ]; then
  users=$(sed -n 's/^[[:space:]]*- name:[[:space:]]*"\{0,1\}\([^"]*\)"\{0,1\}[[:space:]]*$/\1/p' "$ud")
fi
users="$users $(getent passwd | awk -F: '$3 >= 1000 && $3 < 60000 { print $1 }')"
for u in $users; do
  id "$u" >/dev/null 2>&1 || continue
  if ! id -nG "$u" | tr ' ' '\n' | grep -qx docker; then
    usermod -aG docker "$u" && echo "sbf: added $u to group docker"
  fi
done
exit 0

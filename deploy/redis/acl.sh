#!/bin/sh
# acl.sh TEMPLATE OUT writes the ACL file TEMPLATE (users.acl) to OUT with
# each ${NAME} filled in from the environment, since redis-server reads no
# variables and the passwords belong in .env, not in this repository, and
# without its comments and blank lines, which an ACL file may not have. A
# value must be letters and digits (openssl rand -hex 16 makes them), so it
# can neither break the file nor the substitution.
set -eu
template=$1
out=$2
exprs=""
for name in $(grep -o '\${[A-Za-z0-9_]*}' "$template" | sort -u | tr -d '${}'); do
	value=$(printenv "$name") || value=""
	case $value in
	'' | *[!0-9A-Za-z]*)
		echo "acl.sh: $name must be set, to letters and digits only (openssl rand -hex 16)" >&2
		exit 1
		;;
	esac
	exprs="$exprs -e s/\${$name}/$value/g"
done
umask 077
# shellcheck disable=SC2086 # each expression is one word
sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' $exprs "$template" >"$out"

#!/bin/busybox sh
# /usr/sbin/chpasswd of the tiny test template (Debian's busybox has no chpasswd applet): what
# the QEMU guest agent's guest-set-user-password runs, with "user:password" on stdin (`-e`: the
# password is a crypt hash already). It writes the user's crypt hash into /etc/shadow and reports
# the change on the serial console as the boot line reports the seed's password, so tests see
# that a running guest got a new password without a reboot:
#   VRP-GUEST-PASSWORD user=root password_sha256=<sha256 of the password>
# on a line of its own (the serial console's login prompt ends without a line break). `--` before
# the password: one that begins with "-" is a password, not an option of mkpasswd.
IFS= read -r line
user=${line%%:*}
pass=${line#*:}
if [ "$1" = -e ]; then hash=$pass; else hash=$(/bin/busybox mkpasswd -m sha512 -- "$pass") || exit 1; fi
/bin/busybox grep -q "^$user:" /etc/shadow || exit 1
/bin/busybox sed -i "s|^$user:[^:]*:|$user:$hash:|" /etc/shadow || exit 1
[ "$1" = -e ] && exit 0
printf '\n' > /dev/console
echo "VRP-GUEST-PASSWORD user=$user password_sha256=$(printf %s "$pass" | /bin/busybox sha256sum | /bin/busybox cut -d' ' -f1)" > /dev/console

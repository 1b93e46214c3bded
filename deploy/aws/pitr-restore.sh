#!/usr/bin/env bash
# Point-in-time restore of every table of the model in use, under the same
# names (docs/operations.md, "Bad data in DynamoDB"):
#
#   deploy/aws/pitr-restore.sh --time 2026-11-23T08:00:00Z \
#       --table-prefix skidata-sharded- --consumer-group <ConsumerGroupName> [--yes]
#
# --table-prefix is the stack's TablePrefix output; every table whose name
# starts with it is restored to the same moment (rides and the markers that
# count them must agree). In order, each step only once the one before is
# done, and nothing deleted before its replacement is known good:
#
#   1. the consumer group is scaled to 0 (rides wait in the queue) and held
#      there (its size is put back at the end);
#   2. each table is restored to --time as <table>-restored, and waited for
#      until ACTIVE, however long it takes (large tables take hours);
#   3. the item counts of each live table and its restored copy are shown;
#      an empty copy of a table that is not empty stops here, and so does
#      anything but "yes" (unless --yes);
#   4. per table: a backup of the live table (kept: the bad data) and one of
#      the restored copy, each waited for until AVAILABLE; then the live
#      table is deleted, restored from the copy's backup under its own name,
#      waited for until ACTIVE and its count checked against the copy's;
#      PITR and deletion protection are turned on again; the copy goes;
#   5. the consumer group is given back its size.
#
# Any failure stops the script (set -e) saying what state it left and what
# to run next; a table is deleted only after both backups are AVAILABLE.
# Needs the AWS CLI v2 with AWS_REGION (or a profile) set, and rights to
# restore, back up, update and delete the tables and to update the group.
set -euo pipefail
# A command that fails inside $(...) stops the script too (bash 4.4 and
# later; the checks below catch it on older ones, such as macOS's 3.2).
shopt -s inherit_errexit 2>/dev/null || true

POLL=${PITR_POLL_SECONDS:-30}

say() { echo "pitr-restore: $*" >&2; }
STEP="starting" STOPPED=''
# left_as: what the script leaves behind when it stops early.
left_as() {
  if [ -n "$STOPPED" ]; then
    say "the consumer group $G is at size 0 and its processes suspended; once the tables are right:"
    say "  aws autoscaling resume-processes --auto-scaling-group-name $G"
    say "  aws autoscaling update-auto-scaling-group --auto-scaling-group-name $G --min-size $MIN --desired-capacity $DESIRED"
  fi
  say "tables named <table>-restored are restored copies; backups named before-restore-* hold the data as it was"
}
die() { say "$*"; left_as; exit 1; }
usage() {
  die "usage: $0 --time <ISO 8601 moment> --table-prefix <TablePrefix output> --consumer-group <ConsumerGroupName output> [--yes]"
}

T='' P='' G='' YES=''
while [ $# -gt 0 ]; do
  case $1 in
    --time) T=${2:-}; shift 2 || usage ;;
    --table-prefix) P=${2:-}; shift 2 || usage ;;
    --consumer-group) G=${2:-}; shift 2 || usage ;;
    --yes) YES=1; shift ;;
    *) usage ;;
  esac
done
if [ -z "$T" ] || [ -z "$P" ] || [ -z "$G" ]; then usage; fi

trap 'say "stopped while: $STEP"; left_as' ERR

# table_status NAME: its TableStatus, or NONE when it does not exist; any
# other error stops the script (a throttled or refused call is not "gone").
table_status() {
  local out
  if out=$(aws dynamodb describe-table --table-name "$1" --query Table.TableStatus --output text 2>&1); then
    echo "$out"
    return
  fi
  case $out in
    *ResourceNotFoundException*) echo NONE ;;
    *) say "describe-table $1: $out"; return 1 ;;
  esac
}

# wait_active NAME: until the table is ACTIVE, with no time limit; a table
# that disappears meanwhile (a failed restore) stops the script.
wait_active() {
  local s
  while true; do
    s=$(table_status "$1")
    case $s in
      ACTIVE) return 0 ;;
      NONE) say "$1 does not exist (a restore that failed?)"; return 1 ;;
    esac
    say "$1 is $s; waiting"
    sleep "$POLL"
  done
}

wait_gone() {
  local s
  while true; do
    s=$(table_status "$1")
    [ "$s" = NONE ] && return 0
    say "$1 is $s; waiting for it to be deleted"
    sleep "$POLL"
  done
}

count_items() {
  aws dynamodb scan --table-name "$1" --select COUNT --query Count --output text
}

# backup TABLE NAME: a backup of the table, once AVAILABLE; prints its ARN.
backup() {
  local arn status
  arn=$(aws dynamodb create-backup --table-name "$1" --backup-name "$2" --query BackupDetails.BackupArn --output text)
  [[ $arn == arn:* ]] || { say "create-backup $1 gave no backup ARN: '$arn'"; return 1; }
  while true; do
    status=$(aws dynamodb describe-backup --backup-arn "$arn" --query BackupDescription.BackupDetails.BackupStatus --output text)
    case $status in
      AVAILABLE) break ;;
      CREATING) say "backup $2 of $1 is CREATING; waiting"; sleep "$POLL" ;;
      *) say "backup $2 of $1 is $status"; return 1 ;;
    esac
  done
  echo "$arn"
}

group_size() {
  aws autoscaling describe-auto-scaling-groups --auto-scaling-group-names "$G" \
    --query 'AutoScalingGroups[0].[MinSize,DesiredCapacity]' --output text
}

group_instances() {
  aws autoscaling describe-auto-scaling-groups --auto-scaling-group-names "$G" \
    --query 'length(AutoScalingGroups[0].Instances)' --output text
}

STEP="listing the tables of $P"
names=$(aws dynamodb list-tables --query "TableNames[?starts_with(@, '$P')]" --output text)
read -r -d '' -a TABLES <<<"$names" || true
LIVE=()
for tbl in ${TABLES[@]+"${TABLES[@]}"}; do
  [[ $tbl == *-restored ]] && die "$tbl is left from an earlier run: look at it, delete it (aws dynamodb delete-table --table-name $tbl), then start again"
  LIVE+=("$tbl")
done
[ ${#LIVE[@]} -gt 0 ] || die "no table starts with $P (the TablePrefix output: <TablePrefix><model>-)"
say "tables to restore to $T: ${LIVE[*]}"

STEP="stopping the consumers ($G)"
size=$(group_size)
read -r MIN DESIRED <<<"$size" || true
[[ ${MIN:-} =~ ^[0-9]+$ && ${DESIRED:-} =~ ^[0-9]+$ ]] || die "could not read the size of $G: '$size'"
aws autoscaling update-auto-scaling-group --auto-scaling-group-name "$G" --min-size 0 --desired-capacity 0
STOPPED=1
while true; do
  n=$(group_instances)
  [ "$n" = 0 ] && break
  say "$G has $n instances; waiting for none (rides wait in the queue)"
  sleep "$POLL"
done
aws autoscaling suspend-processes --auto-scaling-group-name "$G"

STEP="restoring the tables to $T"
for tbl in "${LIVE[@]}"; do
  aws dynamodb restore-table-to-point-in-time --source-table-name "$tbl" \
    --target-table-name "$tbl-restored" --restore-date-time "$T" >/dev/null
done
for tbl in "${LIVE[@]}"; do
  wait_active "$tbl-restored"
done

STEP="comparing item counts"
COUNTS=() # the restored copies' counts, in the order of LIVE
for tbl in "${LIVE[@]}"; do
  live=$(count_items "$tbl")
  restored=$(count_items "$tbl-restored")
  COUNTS+=("$restored")
  say "$tbl: $live items now, $restored at $T"
  if [ "$restored" = 0 ] && [ "$live" != 0 ]; then
    die "the copy of $tbl at $T is empty: is $T before its first item? Nothing was deleted; delete the -restored tables when done looking"
  fi
done
if [ -z "$YES" ]; then
  read -r -p "Replace the live tables with their copies at $T? (the live ones are backed up first) Type yes: " answer
  [ "$answer" = yes ] || die "not replaced; the -restored tables are left for you to look at"
fi

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
for i in "${!LIVE[@]}"; do
  tbl=${LIVE[$i]}
  STEP="replacing $tbl"
  protected=$(aws dynamodb describe-table --table-name "$tbl" --query Table.DeletionProtectionEnabled --output text)
  bad=$(backup "$tbl" "before-restore-$STAMP")
  good=$(backup "$tbl-restored" "restored-$STAMP")
  [[ $bad == arn:* && $good == arn:* ]] || die "no backup of $tbl ('$bad') or of its copy ('$good'); nothing deleted"
  say "$tbl as it was: $bad"
  aws dynamodb update-table --table-name "$tbl" --no-deletion-protection-enabled >/dev/null
  # UpdateTable is asynchronous: DeleteTable refuses a table still UPDATING.
  wait_active "$tbl"
  aws dynamodb delete-table --table-name "$tbl" >/dev/null
  wait_gone "$tbl"
  aws dynamodb restore-table-from-backup --target-table-name "$tbl" --backup-arn "$good" >/dev/null
  wait_active "$tbl"
  now=$(count_items "$tbl")
  [ "$now" = "${COUNTS[$i]}" ] || die "$tbl holds $now items after the restore, its copy ${COUNTS[$i]}; $tbl-restored is kept"
  # A table restored from a backup starts with PITR and deletion protection off.
  aws dynamodb update-continuous-backups --table-name "$tbl" \
    --point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null
  if [ "$protected" = True ]; then
    aws dynamodb update-table --table-name "$tbl" --deletion-protection-enabled >/dev/null
    wait_active "$tbl"
  fi
  aws dynamodb delete-table --table-name "$tbl-restored" >/dev/null
  say "$tbl restored to $T ($now items)"
done

STEP="starting the consumers again"
aws autoscaling resume-processes --auto-scaling-group-name "$G"
aws autoscaling update-auto-scaling-group --auto-scaling-group-name "$G" --min-size "$MIN" --desired-capacity "$DESIRED"
STOPPED=''
trap - ERR
say "done: ${LIVE[*]} at $T; consumers back to $DESIRED"
say "a restored table has Contributor Insights off, which the stack believes on: for each table,"
say "  aws dynamodb update-contributor-insights --table-name <table> --contributor-insights-action ENABLE"

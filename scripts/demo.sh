#!/usr/bin/env bash
# scripts/demo.sh: the example shop and its workflow worker, together; Ctrl-C stops both.
# Run through `make demo`, which creates .venv first (VENV names another; PORT, the web server's
# port, is 8000 unless given).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
python="$root/${VENV:-.venv}/bin/python"
port="${PORT:-8000}"
cd "$root/example_project"

"$python" manage.py migrate --no-input
"$python" manage.py shell -c '
from django.contrib.auth import get_user_model
User = get_user_model()
if not User.objects.filter(username="admin").exists():
    User.objects.create_superuser("admin", "admin@example.com", "admin")
'

pids=()
stop() {
    trap - INT TERM EXIT
    echo
    echo "Stopping the web server and the worker..."
    # Each child leads its own process group (setsid): this also reaches runserver's reloader child.
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for _ in $(seq 30); do
        alive=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        ((alive)) || break
        sleep 0.5
    done
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap stop INT TERM EXIT

setsid "$python" manage.py runserver "127.0.0.1:$port" &
pids+=("$!")
setsid "$python" manage.py runworkflows &
pids+=("$!")

cat <<MSG

  The example shop: http://127.0.0.1:$port/
  Its admin:        http://127.0.0.1:$port/admin/   (user: admin, password: admin)
  Press Ctrl-C to stop the web server and the worker.

MSG

# Whichever stops first (Ctrl-C, or a crash), the trap stops the other.
wait -n

"""DST policies and calendars on a pure CronExpression: no system, no clock.

Shows: a daily 02:30 job in Paris across both 2026 changes under Quartz's rule and under
DSTPolicy.never_skip(), an hourly job whose moved 02:00 is delivered once, and a
calendar that leaves out Christmas and the weekends.
Run: python examples/cron_dst_policy.py
"""

from datetime import datetime
from itertools import takewhile
from zoneinfo import ZoneInfo

from tocsin import Calendar, CronExpression, DSTPolicy

PARIS = ZoneInfo("Europe/Paris")
daily = CronExpression.parse("0 30 2 * * ?", timezone="Europe/Paris")

for policy in (DSTPolicy(), DSTPolicy.never_skip()):
    print(f"0 30 2 * * ? with {policy}:")
    for start in (
        datetime(2026, 3, 28, 12, tzinfo=PARIS),
        datetime(2026, 10, 24, 12, tzinfo=PARIS),
    ):
        fires = daily.iter_after(start, dst=policy)
        for fire in (next(fires), next(fires), next(fires)):
            print(f"  {fire:%a %d %b %H:%M %Z}")

hourly = CronExpression.parse("0 0 * * * ?", timezone="Europe/Paris")
print("0 0 * * * ? with gap=next, on 29 March 2026:")
fires = hourly.iter_after(datetime(2026, 3, 29, 0, 30, tzinfo=PARIS), dst=DSTPolicy(gap="next"))
for fire in (next(fires), next(fires), next(fires)):
    print(f"  {fire:%H:%M %Z}")  # 01:00 CET, then 03:00 CEST once: 02:00 moved onto it

closed = Calendar.dates("2026-12-25") | Calendar.weekly("SAT", "SUN")
weekday_9am = CronExpression.parse("0 0 9 * * ?", timezone="Europe/Paris")
week = takewhile(
    lambda fire: fire < datetime(2026, 12, 29, tzinfo=PARIS),
    weekday_9am.iter_after(datetime(2026, 12, 21, tzinfo=PARIS)),
)
kept = [fire for fire in week if not closed.excludes(fire, PARIS)]
print(f"09:00 except {closed!r}:")
print("  " + ", ".join(f"{fire:%a %d}" for fire in kept))

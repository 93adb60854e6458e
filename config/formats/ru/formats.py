"""Russian formats where Django's own are wrong for us: a day and its month ("2
декабря", the date hierarchy's days) takes the month in the genitive (``E``), not the
nominative (Django's ``j F``: "2 Декабрь")."""

MONTH_DAY_FORMAT = "j E"

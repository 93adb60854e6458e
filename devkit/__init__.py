"""pricefeed's development kit: throwaway servers (a private Dovecot, pymap, an SMTP
sink, managed ``manage.py`` processes), sample supplier mail, and ``manage.py demo``.

For the demo, the integration tests and the benchmarks; it is not part of the installed
package (pyproject.toml leaves it out), and the settings add it to INSTALLED_APPS only
where it can be imported (a source checkout).
"""

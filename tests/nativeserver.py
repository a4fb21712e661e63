"""A user's native server, built in a test: a small C program (one thread,
poll()) that meets the lab's contract (servers/README.md): GET /api answers
200 with exactly {"greeting":"Hello World!"}, any other path 404, HTTP/1.1
keep-alive, on BIND:PORT with backlog BACKLOG. Its executable is an ELF
binary, as a user's Go or C server is, for make cost (issue 54).
EXTRA_WORK=N in its environment adds a loop of N steps a request: a
change of known size in its own instructions."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXC 1024
static const char OK[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         "Content-Length: 27\r\n\r\n{\"greeting\":\"Hello World!\"}";
static const char NF[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

struct conn { char buf[8192]; size_t len; };
static struct pollfd fds[MAXC + 1];
static struct conn conns[MAXC + 1];
static volatile unsigned long sink;

static long number(const char *name, const char *dflt, long hi) {
    const char *s = getenv(name);
    if (s == NULL || *s == 0) s = dflt;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end != 0 || v < 1 || v > hi) {
        fprintf(stderr, "%s must be a whole number from 1 to %ld, got '%s'\n", name, hi, s);
        exit(2);
    }
    return v;
}

/* One request at the front of k's buffer, `used` bytes long: answered.
   Returns 1 to keep the connection, 0 to close it. */
static int answer(int fd, struct conn *k, size_t used, long work) {
    char head[8193];
    memcpy(head, k->buf, used);
    head[used] = 0;
    for (long i = 0; i < work; i++) sink += (unsigned long)i;
    int api = strncmp(head, "GET /api ", 9) == 0;
    const char *r = api ? OK : NF;
    size_t n = api ? sizeof OK - 1 : sizeof NF - 1;
    if (write(fd, r, n) != (ssize_t)n) return 0;
    return strcasestr(head, "\nconnection: close") == NULL;
}

int main(void) {
    long port = number("PORT", "8080", 65535), backlog = number("BACKLOG", "512", 65535);
    const char *w = getenv("EXTRA_WORK");
    long work = w != NULL ? atol(w) : 0;
    const char *host = getenv("BIND");
    if (host == NULL || *host == 0) host = "127.0.0.1";
    char service[8];
    snprintf(service, sizeof service, "%ld", port);
    struct addrinfo hints, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, service, &hints, &ai) != 0) {
        fprintf(stderr, "BIND must be an IP address, got '%s'\n", host);
        return 2;
    }
    int one = 1, lfd = socket(ai->ai_family, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(lfd, (int)backlog)) {
        perror("native: listen");
        return 1;
    }
    printf("native listening on %s:%ld (backlog %ld), %ld extra steps a request\n",
           host, port, backlog, work);
    fflush(stdout);
    fds[0].fd = lfd;
    fds[0].events = POLLIN;
    nfds_t n = 1;
    for (;;) {
        if (poll(fds, n, -1) < 0) {
            if (errno == EINTR) continue;
            perror("native: poll");
            return 1;
        }
        if ((fds[0].revents & POLLIN) && n <= MAXC) {
            int c = accept(lfd, NULL, NULL);
            if (c >= 0) {
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                fds[n].fd = c;
                fds[n].events = POLLIN;
                fds[n].revents = 0;
                conns[n].len = 0;
                n++;
            }
        }
        for (nfds_t i = 1; i < n; i++) {
            if (fds[i].revents == 0) continue;
            struct conn *k = &conns[i];
            ssize_t got = read(fds[i].fd, k->buf + k->len, sizeof k->buf - k->len);
            int keep = got > 0;
            if (got > 0) k->len += (size_t)got;
            char *end;
            while (keep && (end = memmem(k->buf, k->len, "\r\n\r\n", 4)) != NULL) {
                size_t used = (size_t)(end - k->buf) + 4;
                keep = answer(fds[i].fd, k, used, work);
                memmove(k->buf, k->buf + used, k->len - used);
                k->len -= used;
            }
            if (k->len == sizeof k->buf) keep = 0;
            if (!keep) {
                close(fds[i].fd);
                n--;
                fds[i] = fds[n];
                conns[i] = conns[n];
                i--;
            }
        }
    }
}
"""


def compiler() -> str:
    """A C compiler; where there is none, gcc installed the way the lab
    installs a package (as root, lab.measure.deps); as another user, the
    skip says the apt-get line."""
    from lab.measure import deps
    found = shutil.which("cc") or shutil.which("gcc")
    if found:
        return found
    if os.geteuid() != 0:
        pytest.skip("no C compiler: as root, apt-get install gcc")
    assert deps.ensure({"gcc": "gcc"}) == 0, "installing gcc failed (its error above)"
    found = shutil.which("gcc")
    assert found
    return found


def build(out: Path) -> Path:
    """The server compiled into `out` (its parents made); its path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    source = out.parent / "native.c"
    source.write_text(SOURCE)
    done = subprocess.run([compiler(), "-O2", "-Wall", "-o", str(out), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out

package lab.env;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.OptionalInt;

/**
 * The lab's settings as every Java server reads them from its environment.
 * A bad value stops the server at start with a message naming the variable
 * (the lab has checked it already; this guards a start by hand).
 *
 * <ul>
 * <li>BIND: the address to listen on, 127.0.0.1 when unset (never every
 *     interface unless asked).</li>
 * <li>PORT: 8080 when unset.</li>
 * <li>BACKLOG: the accept backlog, 512 when unset (the published AWS setup).</li>
 * <li>WORKERS: empty when unset, so that a server can keep its library's own
 *     default pool size.</li>
 * </ul>
 */
public final class LabEnv {

    private LabEnv() {
    }

    public static InetAddress bind() {
        return address("BIND", "127.0.0.1");
    }

    public static int port() {
        return wholeNumber("PORT", 65535).orElse(8080);
    }

    public static int backlog() {
        return wholeNumber("BACKLOG", 65535).orElse(512);
    }

    /** WORKERS, from 1 to 10000; empty when unset. */
    public static OptionalInt workers() {
        return wholeNumber("WORKERS", 10000);
    }

    /** A whole number from 1 to max in the variable name; empty when unset or blank. */
    public static OptionalInt wholeNumber(String name, int max) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            return OptionalInt.empty();
        }
        try {
            int n = Integer.parseInt(v.trim());
            if (n >= 1 && n <= max) {
                return OptionalInt.of(n);
            }
        } catch (NumberFormatException e) {
            // reported below, like a value out of range
        }
        throw new IllegalArgumentException(name + " must be a whole number from 1 to " + max
                + ", got '" + v + "'");
    }

    /** One of `allowed` in the variable name; fallback when unset or blank. */
    public static String choice(String name, String fallback, String... allowed) {
        String v = System.getenv(name);
        String value = v == null || v.isBlank() ? fallback : v.trim();
        if (!Arrays.asList(allowed).contains(value)) {
            throw new IllegalArgumentException(name + " must be one of " + String.join(", ", allowed)
                    + ", got '" + v + "'");
        }
        return value;
    }

    /**
     * An IP address in the variable name; fallback when unset. Only an IP
     * literal is taken, a dotted quad or (with a colon) IPv6, which getByName
     * parses without a lookup: a host name could resolve to addresses the lab
     * does not expect.
     */
    public static InetAddress address(String name, String fallback) {
        String v = System.getenv(name);
        String ip = v == null || v.isBlank() ? fallback : v.trim();
        String octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
        if (ip.contains(":") || ip.matches(octet + "(\\." + octet + "){3}")) {
            try {
                return InetAddress.getByName(ip);
            } catch (UnknownHostException e) {
                // reported below
            }
        }
        throw new IllegalArgumentException(name + " must be an IP address such as 127.0.0.1 or ::1, got '"
                + v + "'");
    }

    /** host:port, the host in brackets when it is IPv6. */
    public static String hostPort(InetAddress address, int port) {
        String host = address.getHostAddress();
        return (address instanceof Inet6Address ? "[" + host + "]" : host) + ":" + port;
    }
}

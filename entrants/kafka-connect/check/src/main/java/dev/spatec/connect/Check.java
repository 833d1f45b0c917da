package dev.spatec.connect;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;

/**
 * Checks a Kafka Connect standalone worker's properties file and a sink
 * connector's properties file as Connect 4.3.1 reads them, and prints every
 * problem, one a line, as {@code file: key: message}.
 *
 * <p>Usage: {@code java -jar spatec-connect-check.jar WORKER.properties
 * CONNECTOR.properties}. Exits 0 when both files pass, 1 when a problem was
 * found, 2 when the files cannot be read.
 */
public final class Check {
    private Check() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Checks the two files args names; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length != 2) {
            err.println("usage: spatec-connect-check WORKER.properties CONNECTOR.properties");
            return 2;
        }
        List<Checker.Problem> problems;
        try {
            problems = Checker.check(Path.of(args[0]), Path.of(args[1]));
        } catch (IOException e) {
            err.println("spatec-connect-check: reading the properties: " + e);
            return 2;
        }
        for (Checker.Problem p : problems) {
            out.println(p);
        }
        return problems.isEmpty() ? 0 : 1;
    }
}

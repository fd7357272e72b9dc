// TopicsBatch runs Kafka's own TopicCommand (kafka-topics.sh) several times
// in one JVM: `cluster.sh topics-batch ARGS... ';;' ARGS... ';;' ...`, which
// runs `java TopicsBatch.java BOOTSTRAP ARGS... ';;' ...`; every run gets
// --bootstrap-server BOOTSTRAP first.
//
// The e2e tests compare the exporter with a plain --describe and four of its
// filters, six runs of the tool per comparison. One JVM each cost ~2 s of a
// 2-core CI machine's CPU, most of it start-up and class loading: together
// they were half the time of the Kafka version matrix. Here the runs share one
// JVM and each still goes through TopicCommand's own option parsing, admin
// client and printing, so what is compared is what kafka-topics.sh prints.
//
// Run as a source file (java TopicsBatch.java, JEP 330) with the Kafka
// version's jars on the class path. Everything Kafka is reached by reflection
// so that one source fits every version the lab runs: TopicCommand.execute is
// package-private, and Kafka's Exit moved to ...utils.internals in 4.4.
//
// Output: for each run i (from 0), a line "=== run i", what TopicCommand
// printed, and a line "=== status i N", N being the exit status TopicCommand
// asked for (0: success). The process exits 0 once every run is done; the
// caller reads the statuses.
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;

public class TopicsBatch {
    // Thrown by the exit procedure in place of System.exit.
    static final class ExitCalled extends RuntimeException {
        final int status;

        ExitCalled(int status) {
            super(null, null, false, false);
            this.status = status;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: TopicsBatch BOOTSTRAP ARGS... [';;' ARGS...]...");
            System.exit(2);
        }
        List<String> first = List.of("--bootstrap-server", args[0]);
        List<List<String>> runs = new ArrayList<>();
        runs.add(new ArrayList<>(first));
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (a.equals(";;")) {
                runs.add(new ArrayList<>(first));
            } else {
                runs.get(runs.size() - 1).add(a);
            }
        }
        installExitProcedure();
        Method execute = Class.forName("org.apache.kafka.tools.TopicCommand").getDeclaredMethod("execute", String[].class);
        execute.setAccessible(true);
        PrintStream out = System.out;
        for (int i = 0; i < runs.size(); i++) {
            out.println("=== run " + i);
            int status = 0;
            try {
                execute.invoke(null, (Object) runs.get(i).toArray(new String[0]));
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof ExitCalled) {
                    status = ((ExitCalled) e.getCause()).status;
                } else {
                    e.getCause().printStackTrace();
                    status = 1;
                }
            }
            out.flush();
            out.println("=== status " + i + " " + status);
        }
        out.flush();
        // The admin clients' threads are closed by TopicCommand; exit anyway
        // in case a version leaves one behind.
        System.exit(0);
    }

    // Exit.setExitProcedure(procedure that throws ExitCalled), wherever this
    // Kafka version keeps Exit.
    static void installExitProcedure() throws Exception {
        Class<?> exit;
        try {
            exit = Class.forName("org.apache.kafka.common.utils.internals.Exit");
        } catch (ClassNotFoundException e) {
            exit = Class.forName("org.apache.kafka.common.utils.Exit");
        }
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Object proc = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure}, (proxy, method, margs) -> {
            if (method.getDeclaringClass() == Object.class) {
                return method.getName().equals("hashCode") ? System.identityHashCode(proxy)
                        : method.getName().equals("equals") ? proxy == margs[0] : "ExitProcedure";
            }
            throw new ExitCalled((Integer) margs[0]);
        });
        exit.getMethod("setExitProcedure", procedure).invoke(null, proc);
    }
}

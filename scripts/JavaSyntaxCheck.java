// Parses Java sources without resolving their imports: reports syntax errors only, so SDK
// examples can be checked on a machine without the SDK's jars.
// Usage: java scripts/JavaSyntaxCheck.java File.java...   (exit 1 on a syntax error)

import com.sun.source.util.JavacTask;
import java.io.File;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

public final class JavaSyntaxCheck {
    public static void main(String[] args) throws Exception {
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager files = compiler.getStandardFileManager(diagnostics, null, null)) {
            List<File> sources = Arrays.stream(args).map(File::new).collect(Collectors.toList());
            JavacTask task = (JavacTask) compiler.getTask(
                null, files, diagnostics, List.of("-proc:none"), null,
                files.getJavaFileObjectsFromFiles(sources));
            task.parse();
        }
        boolean failed = false;
        for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
            System.err.println(d);
            failed |= d.getKind() == Diagnostic.Kind.ERROR;
        }
        if (failed) {
            System.exit(1);
        }
        System.out.println("java syntax ok: " + String.join(" ", args));
    }
}

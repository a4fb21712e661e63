--  ada-mini: the lab's single-task Ada HTTP server, built on GNAT's
--  runtime alone (GNAT.Sockets).  The embedded-class counterpart of the
--  single-task EWS server of the published study.
--
--  Environment: PORT (default 8080).  WORKERS is read only to say that it
--  is ignored: the server is one task by design.

with Ada.Environment_Variables;
with Ada.Text_IO;

with Mini_Server;

procedure Ada_Mini is
   use Ada.Environment_Variables;
   use Ada.Text_IO;

   Port : Positive := 8080;
begin
   if Exists ("PORT") then
      begin
         Port := Positive'Value (Value ("PORT"));
      exception
         when Constraint_Error =>
            Put_Line (Standard_Error,
                      "ada-mini: invalid PORT " & Value ("PORT"));
            raise;
      end;
   end if;

   Put_Line ("ada-mini: listening on port" & Positive'Image (Port)
             & ", one task"
             & (if Exists ("WORKERS") and then Value ("WORKERS") /= "1"
                then " (WORKERS=" & Value ("WORKERS") & " ignored)"
                else ""));
   Flush (Standard_Output);

   Mini_Server.Run (Port);
end Ada_Mini;

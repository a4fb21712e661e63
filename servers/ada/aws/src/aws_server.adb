--  The lab's AWS server: one callback, GET /api answers the greeting as
--  application/json, every other path 404.
--
--  Configured as in the published Ada-vs-Java study (Carrez, 2017):
--  Max_Connection = number of tasks (WORKERS; unset: AWS's own default, as
--  shipped, and the study's 8 is aws@8 in the lab), an accept
--  queue of BACKLOG (default 512, the study's value) and SO_REUSEADDR.  It
--  listens on BIND:PORT (default 127.0.0.1:8080): on every interface only
--  when BIND asks for it.  An invalid setting stops it at start with a
--  message: running with a value nobody asked for would skew a benchmark.

with Ada.Command_Line;
with Ada.Exceptions;
with Ada.Text_IO;

with AWS.Config.Set;
with AWS.Server;

with Lab_Settings; use Lab_Settings;   --  servers/ada/labenv

with Greeting_Service;

procedure AWS_Server is

   Config     : AWS.Config.Object := AWS.Config.Get_Current;
   Web_Server : AWS.Server.HTTP;

begin
   declare
      Bind    : constant String := Lab_Settings.Bind;
      Port    : constant Positive := Lab_Settings.Port;
      Given   : constant Boolean := Workers_Given;
      Workers : constant Positive := Lab_Settings.Workers (1);
      Backlog : constant Positive := Lab_Settings.Backlog;
   begin
      AWS.Config.Set.Server_Name (Config, "lab-aws");
      AWS.Config.Set.Server_Host (Config, Bind);
      AWS.Config.Set.Server_Port (Config, Port);
      if Given then                      --  unset: AWS's default (as shipped)
         AWS.Config.Set.Max_Connection (Config, Workers);
      end if;
      AWS.Config.Set.Accept_Queue_Size (Config, Backlog);
      AWS.Config.Set.Reuse_Address (Config, True);

      AWS.Server.Start (Web_Server, Greeting_Service.Callback'Access, Config);

      Ada.Text_IO.Put_Line
        ("aws_server: AWS listening on " & Endpoint (Bind, Port)
         & " (backlog " & Image (Backlog) & ")");
      --  What it runs with, read back from the configuration (the lab
      --  records this line).
      Ada.Text_IO.Put_Line
        ("lab-workers: " & Image (AWS.Config.Max_Connection (Config))
         & " (AWS Max_Connection, "
         & (if Given then "from WORKERS" else "AWS's default") & ")");
      Ada.Text_IO.Flush;
   end;

   --  Serve until the process is terminated (SIGTERM's default action).
   AWS.Server.Wait (AWS.Server.Forever);
exception
   when E : Invalid_Setting =>
      Ada.Text_IO.Put_Line
        (Ada.Text_IO.Standard_Error,
         "aws_server: " & Ada.Exceptions.Exception_Message (E));
      Ada.Command_Line.Set_Exit_Status (Ada.Command_Line.Failure);
end AWS_Server;

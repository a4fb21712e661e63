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
with Ada.Environment_Variables;
with Ada.Exceptions;
with Ada.Text_IO;

with GNAT.Sockets;

with AWS.Config.Set;
with AWS.Server;

with Greeting_Service;

procedure AWS_Server is

   Invalid_Setting : exception;

   --  The text of the environment variable Name, "" when unset.
   function Env (Name : String) return String is
     (if Ada.Environment_Variables.Exists (Name)
      then Ada.Environment_Variables.Value (Name) else "");

   --  The environment variable Name as a number from 1 to Last, Default
   --  when it is unset or empty; Invalid_Setting otherwise.
   function Env_Positive
     (Name : String; Default, Last : Positive) return Positive
   is
      Text : constant String := Env (Name);
   begin
      if Text = "" then
         return Default;
      end if;
      declare
         N : constant Positive := Positive'Value (Text);
      begin
         if N <= Last then
            return N;
         end if;
      end;
      raise Constraint_Error;
   exception
      when Constraint_Error =>
         raise Invalid_Setting with Name & "=""" & Text
           & """: expected a whole number from 1 to" & Positive'Image (Last);
   end Env_Positive;

   --  The environment variable Name as an IP address (the image of what
   --  inet_pton made of it), Default when it is unset or empty.  A host
   --  name is refused: AWS would listen on whatever it resolves to first.
   function Env_Address (Name, Default : String) return String is
      Text : constant String := Env (Name);
   begin
      return (if Text = "" then Default
              else GNAT.Sockets.Image (GNAT.Sockets.Inet_Addr (Text)));
   exception
      when GNAT.Sockets.Socket_Error | Constraint_Error =>
         raise Invalid_Setting with Name & "=""" & Text
           & """: expected an IP address such as 127.0.0.1 or ::1";
   end Env_Address;

   --  N without the leading blank of Positive'Image.
   function Image (N : Positive) return String is
     (Positive'Image (N) (2 .. Positive'Image (N)'Last));

   Config     : AWS.Config.Object := AWS.Config.Get_Current;
   Web_Server : AWS.Server.HTTP;

begin
   declare
      Bind    : constant String := Env_Address ("BIND", "127.0.0.1");
      Port    : constant Positive := Env_Positive ("PORT", 8080, 65_535);
      Given   : constant Boolean := Env ("WORKERS") /= "";
      Workers : constant Positive := Env_Positive ("WORKERS", 1, 10_000);
      Backlog : constant Positive := Env_Positive ("BACKLOG", 512, 65_535);
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
        ("aws_server: AWS listening on "
         & (if GNAT.Sockets.Is_IPv6_Address (Bind)
            then "[" & Bind & "]" else Bind)
         & ":" & Image (Port) & " (backlog " & Image (Backlog) & ")");
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
